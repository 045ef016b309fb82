"""The ``sync`` command (reflex/cli/sync.py): a recorded run replayed into a tracker, from its run
directory, against a real sqlite MLflow store read back with MlflowClient.

The tracker outages (an unreachable store, a sync that fills a gap, W&B twice) are in
tests/reliability/test_sync_outcome.py; a run made without trackers synced into both in
tests/reliability/test_tracker_death.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from mlflow import MlflowClient
from test_engine import START, builder

from reflex import OptimizationResult
from reflex.cli import build_cli
from reflex.testing import FakeModel


def sync(*args: str) -> Result:
    return CliRunner().invoke(build_cli(), ["sync", *args])


@pytest.fixture
def finished(fake_model: FakeModel, tmp_path: Path) -> OptimizationResult:
    """A finished run made with no tracker, under ``tmp_path/.reflex``."""
    return builder(tmp_path / ".reflex").run(START)


def test_sync_replays_the_recorded_scores_into_mlflow(
    finished: OptimizationResult, tmp_path: Path, uri: str
) -> None:
    run_dir = str(tmp_path / ".reflex")
    done = sync(str(finished.run_id), "--run-dir", run_dir, "--mlflow-tracking-uri", uri)
    assert done.exit_code == 0, done.output
    saved = json.loads(Path(str(finished.run_dir), ".trackers.json").read_text(encoding="utf-8"))
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(saved["mlflow"]["run_id"])
    assert run.info.status == "FINISHED"
    assert finished.final is not None and finished.baseline is not None
    assert run.data.metrics["final_score_test"] == pytest.approx(finished.final.mean_score)
    train = [m.value for m in client.get_metric_history(run.info.run_id, "score_train")]
    assert train == pytest.approx([r.score for r in finished.iterations])
    lines = done.stderr.splitlines()
    assert lines[0] == f"synced run {finished.run_id} into MLflow"
    assert lines[1].startswith(f"MLflow: run {run.info.run_id} in experiment 'aevyra-reflex'")


def test_sync_without_a_tracker_is_refused_before_the_run_is_looked_up(tmp_path: Path) -> None:
    done = sync("no-such-run", "--run-dir", str(tmp_path / ".reflex"))
    assert done.exit_code == 2, done.output
    assert done.stderr.splitlines() == [
        "error: name a tracker to sync into: --mlflow ... or --wandb ..."
    ]


def test_sync_of_a_run_with_no_result_says_to_resume_it(
    finished: OptimizationResult, tmp_path: Path, uri: str
) -> None:
    folder = Path(str(finished.run_dir))
    (folder / "result.json").unlink()  # as a run killed before its end looks
    done = sync(str(folder), "--mlflow-tracking-uri", uri)
    assert done.exit_code == 2, done.output
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: {folder}: no config.json/result.json to replay"), line
    assert "--resume" in line
    assert MlflowClient(tracking_uri=uri).get_experiment_by_name("aevyra-reflex") is None


def test_sync_of_an_unknown_run_lists_the_latest(
    finished: OptimizationResult, tmp_path: Path
) -> None:
    run_dir = str(tmp_path / ".reflex")
    done = sync("no-such-run", "--run-dir", run_dir, "--wandb-mode", "disabled")
    assert done.exit_code == 2, done.output
    [line] = done.stderr.splitlines()
    assert line.startswith("error: no run matching 'no-such-run'"), line
    assert f"latest: {finished.run_id}" in line
