"""``aevyra-reflex sync`` says what it did not sync, settles ``.trackers.json`` and logs nothing
twice.

A sync into an unreachable tracker used to print "synced run ..." and exit 0. Now a tracker the
replay did not reach is an ``error:`` line naming it (exit 2), ``"missed": true`` goes once a
sync has filled the gap, and a second W&B sync logs no second ``best-prompt`` artifact. Real
MLflow stores (sqlite; unreachable: a closed port on 127.0.0.1) and real W&B offline runs, read
back from disk.
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_resume import START, builder, reasoner_variants
from test_tracker_names import wandb_env  # noqa: F401 - module fixture: W&B files in tmp

from reflex.cli import build_cli
from reflex.run.trackers import save_tracker_state, tracker_state
from reflex.testing import FakeModel
from reflex_wandb.offline import logged_artifacts


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens once the socket is closed


def sync(run: Path, *options: str) -> tuple[int, str]:
    args = ["sync", run.name, "--run-dir", str(run.parent.parent), *options]
    done = CliRunner().invoke(build_cli(), args)
    return done.exit_code, str(done.output)


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished run made with no tracker."""
    monkeypatch.chdir(tmp_path)
    FakeModel(reasoner_variants).install()
    result = builder(tmp_path / "runs", "instructions").run(START)
    return Path(str(result.run_dir))


def test_sync_into_an_unreachable_tracker_fails_and_names_it(run: Path) -> None:
    dead = f"http://127.0.0.1:{closed_port()}"
    code, output = sync(run, "--mlflow-tracking-uri", dead, "--wandb-mode", "offline")
    assert code == 2, output
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "not synced into MLflow" in errors[0], output
    assert "unreachable" in errors[0] and "sync again" in errors[0]
    # W&B (offline) did land, and says so; nothing claims MLflow got the run.
    assert f"synced run {run.name} into W&B" in output
    assert "into MLflow" not in output.replace("not synced into MLflow", "")
    assert "run_id" not in tracker_state(run, "mlflow")


def test_a_sync_that_fills_the_gap_clears_missed(
    run: Path,
    tmp_path: Path,
    template_db: Path,
) -> None:
    shutil.copy(template_db, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    # What the breaker records when a tracker dies mid-run (test_tracker_death makes it real).
    save_tracker_state(run, "mlflow", offline_in="on_iteration", missed=True)
    save_tracker_state(run, "wandb", offline_in="on_iteration", missed=True)
    dead = f"http://127.0.0.1:{closed_port()}"
    code, output = sync(run, "--mlflow-tracking-uri", dead)  # a sync that did not land
    assert code == 2 and tracker_state(run, "mlflow")["missed"] is True, output
    code, output = sync(run, "--mlflow-tracking-uri", uri, "--wandb-mode", "offline")
    assert code == 0, output
    assert f"synced run {run.name} into MLflow, W&B" in output
    saved = json.loads((run / ".trackers.json").read_text(encoding="utf-8"))
    for tracker in ("mlflow", "wandb"):
        assert "missed" not in saved[tracker] and "offline_in" not in saved[tracker]
        assert saved[tracker]["run_id"]


def test_a_second_wandb_sync_logs_no_second_best_prompt(run: Path) -> None:
    code, output = sync(run, "--wandb-mode", "offline")
    assert code == 0, output
    [first] = tracker_state(run, "wandb")["sync_dirs"]
    code, output = sync(run, "--wandb-mode", "offline")
    assert code == 0, output
    dirs = tracker_state(run, "wandb")["sync_dirs"]
    assert len(dirs) == 2 and dirs[0] == first
    import wandb

    wandb.teardown()  # flush the last .wandb file
    artifacts = [[name for name, _ in logged_artifacts([d])] for d in dirs]
    assert [
        [n for n in names if not n.endswith(("-evaluation", "-rows_baseline", "-rows_final"))]
        for names in artifacts
    ] == [
        ["best-prompt"],
        [],
    ]
    assert artifacts[1] == []  # nor a second evaluation table
