"""``promote`` / ``rollback`` mirrored on W&B: a run logged to MLflow (a real sqlite store) and to
an offline W&B run; each move of ``@production`` in the registry logs the saved prompt again as
``best-prompt`` with that alias, in a small offline run of the same project, read back from
disk: the promoted artifact has the winner run's digest (the same W&B version), the rolled-back
one holds the prompt the alias holds again."""

from __future__ import annotations

import glob
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import wandb
from conftest import BETTER, make_rows
from mlflow import MlflowClient
from test_engine import START, builder
from test_mlflow_promotion import registry  # noqa: F401 - cat v1 = START, held by @production
from test_mlflow_registry import store  # noqa: F401 - the sqlite store fixture (template_db: conftest)
from wandb_reader import load_run

from reflex.testing import FakeModel
from reflex_mlflow import MLflowCallback, promote, rollback
from reflex_wandb import WandbCallback
from reflex_wandb.aliases import mirror_alias


@pytest.fixture(autouse=True)
def wandb_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """W&B's files out of $HOME, its banner out of the output."""
    for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.setenv(name, str(tmp_path / "wandb-home" / name.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_ERROR_REPORTING", "false")
    yield
    wandb.teardown()


def _runs(folder: Path) -> dict[str, dict[str, Any]]:
    """Every offline W&B run under ``folder``, read back from disk, by job type."""
    wandb.teardown()  # run.finish() returns before the .wandb file is flushed
    found = [load_run(d) for d in sorted(glob.glob(str(folder / "wandb" / "offline-run-*")))]
    return {run["job_type"] or "optimize": run for run in found}


def _prompts(run: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for a in run["artifacts"] if a["name"] == "best-prompt"]


def _prompt_file(artifact: dict[str, Any]) -> str:
    return Path(artifact["files"]["best_prompt.txt"]).read_text(encoding="utf-8")


def test_promote_and_rollback_move_the_alias_on_the_wandb_artifact(
    fake_model: FakeModel,
    tmp_path: Path,
    registry: MlflowClient,  # noqa: F811
) -> None:
    runs, where = tmp_path / "runs", tmp_path / "w"
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in make_rows()))
    wandb_run = WandbCallback(mode="offline", dir=str(where))
    result = (
        builder(runs)
        .set_dataset(rows)
        .run("prompts:/cat@production", callbacks=[MLflowCallback(), wandb_run])
    )
    assert result.best_prompt == BETTER

    move = promote(str(result.run_id), run_dir=runs)
    assert move.changed and (move.version, move.previous) == ("2", "1")
    assert len(move.mirrors) == 1 and move.mirrors[0].startswith("W&B: @production on ")
    logged = _runs(where)
    assert set(logged) == {"optimize", "reflex-promote"}
    (winner,) = _prompts(logged["optimize"])
    (promoted,) = logged["reflex-promote"]["artifacts"]  # the alias run logs nothing else
    assert winner["aliases"] == ["latest"]
    assert (promoted["name"], promoted["type"]) == ("best-prompt", "prompt")
    assert promoted["aliases"] == ["latest", "production"]
    # The same file, so the same digest: W&B keeps one version and the alias lands on it.
    assert promoted["digest"] == winner["digest"] and _prompt_file(promoted) == BETTER
    assert promoted["metadata"] == {
        "reflex_run_id": result.run_id,
        "mlflow_prompt": "prompts:/cat/2",
    }
    assert logged["reflex-promote"]["config"]["action"] == "promote"

    back = rollback("cat", run_dir=runs)
    assert back.changed and (back.version, back.previous) == ("1", "2")
    assert len(back.mirrors) == 1 and "@production" in back.mirrors[0]
    (rolled,) = _runs(where)["reflex-rollback"]["artifacts"]
    # v1 was registered by hand (no reflex run): the prompt it holds, from the registry.
    assert rolled["aliases"] == ["latest", "production"] and _prompt_file(rolled) == START
    assert rolled["digest"] != winner["digest"]

    # A second rollback moves nothing, so it logs nothing to W&B either.
    assert not rollback("cat", run_dir=runs).mirrors
    assert set(_runs(where)) == {"optimize", "reflex-promote", "reflex-rollback"}


def test_a_move_of_runs_never_logged_to_wandb_is_nothing_to_it(tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "runs" / "r1"  # a run of <run dir>/runs, without W&B state
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps({"best_prompt": BETTER}))
    run_dir = str(tmp_path / "runs")
    said = mirror_alias("cat", "production", "2", "1", "r1", None, BETTER, "promote", run_dir)
    assert said is None
    assert not (tmp_path / "wandb").exists() and not glob.glob(str(tmp_path / "**/offline-run-*"))
