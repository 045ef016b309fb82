"""WandbCallback on real offline W&B runs, read back from the .wandb file after teardown."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import wandb
from canaries import URL_CASES
from test_engine import START, builder
from wandb_reader import load_run

from reflex import DegenerateSeedError
from reflex.testing import FakeModel
from reflex_wandb import WandbCallback


@pytest.fixture(scope="module", autouse=True)
def wandb_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep W&B's files out of $HOME and its banner out of the output (set before any init)."""
    root = tmp_path_factory.mktemp("wandb-home")
    with pytest.MonkeyPatch.context() as mp:
        for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
            mp.setenv(name, str(root / name.lower()))
        mp.setenv("WANDB_SILENT", "true")
        mp.setenv("WANDB_ERROR_REPORTING", "false")
        yield


def read_back(callback: WandbCallback) -> dict[str, Any]:
    assert callback.run is not None
    sync_dir = callback.run.settings.sync_dir
    wandb.teardown()  # run.finish() returns before the .wandb file is flushed
    return load_run(sync_dir)


def test_offline_run_is_logged(fake_model: FakeModel, tmp_path: Path) -> None:
    callback = WandbCallback(
        run_name="opt-1",
        tags=["nightly"],
        mode="offline",
        log_prompt_each_iter=True,
        dir=str(tmp_path),
    )
    # priced, so the cost is logged (an unpriced run logs none: unknown, not 0)
    result = builder(tmp_path).set_price("fake/task", 1.0, 2.0).run(START, callbacks=[callback])
    run = read_back(callback)
    assert run["name"] == "opt-1" and set(run["tags"]) == {"nightly", "iterative"}
    assert run["exit_code"] == 0

    config = run["config"]
    assert config["strategy"] == "iterative" and config["reasoning_model"] == "fake/reasoner"
    assert config["target_model"] == "fake/task" and config["max_iterations"] == 5
    assert config["dataset_size"] == 30 and config["metrics"] == "exact_match"
    assert {config[f"split_size_{k}"] for k in result.split_sizes} == set(
        result.split_sizes.values()
    )

    assert result.baseline is not None and result.final is not None
    n = len(result.iterations)
    rows = [row for row in run["history"] if "iteration" in row]
    tests = [(row["iteration"], row["score_test"]) for row in rows if "score_test" in row]
    assert tests == [(0, result.baseline.mean_score), (n + 1, result.final.mean_score)]
    trains = [(row["iteration"], row.get("score_train")) for row in rows if "tokens" in row]
    assert trains == [(r.iteration, r.score) for r in result.iterations]
    first = next(row for row in rows if row.get("iteration") == 1)
    assert {"score_val", "score_exact_match", "tokens", "cost_usd"} <= set(first)

    summary = run["summary"]
    assert summary["final_score_test"] == result.final.mean_score == 1.0
    assert summary["baseline_score"] == result.baseline.mean_score
    assert summary["improvement"] == pytest.approx(result.improvement)
    assert summary["improvement_pct"] == pytest.approx(result.improvement_pct)
    assert summary["total_iterations"] == n and summary["best_score_train"] == 1.0
    assert summary["converged"] in (0.0, 1.0) and summary["best_prompt"] == result.best_prompt
    assert summary["prompts._type"] == "table-file" and summary["prompts.nrows"] == n
    table = json.loads((Path(run["dir"]) / "files" / summary["prompts.path"]).read_text())
    assert table["columns"] == ["iteration", "score", "val_score", "prompt", "reasoning", "race"]
    assert [row[3] for row in table["data"]] == [r.system_prompt for r in result.iterations]

    [artifact] = [a for a in run["artifacts"] if a["type"] == "prompt"]
    assert artifact["name"] == "best-prompt"
    assert list(artifact["files"]) == ["best_prompt.txt"]
    assert artifact["metadata"]["final_score_test"] == 1.0
    local = artifact["files"]["best_prompt.txt"]
    assert Path(local).read_text(encoding="utf-8") == result.best_prompt


@pytest.mark.parametrize("case", sorted(URL_CASES))
def test_url_credentials_are_redacted_in_the_config(
    case: str, fake_model: FakeModel, tmp_path: Path
) -> None:
    url, redacted, canaries = URL_CASES[case]
    callback = WandbCallback(mode="offline", dir=str(tmp_path / "w"))
    builder(tmp_path).add_provider("fake", "task2", api_base=url).run(START, callbacks=[callback])
    run = read_back(callback)
    assert run["config"]["target_source"] == redacted
    logged = json.dumps([run["config"], run["summary"]], default=str)
    assert [c for c in canaries if c in logged] == []
    # W&B's own files (debug logs, metadata) hold the config too.
    files = [p for p in (tmp_path / "w").rglob("*") if p.is_file()]
    assert [(p.name, c) for p in files for c in canaries if c.encode() in p.read_bytes()] == []


def test_run_error_finishes_with_exit_code_1(tmp_path: Path) -> None:
    FakeModel(lambda request: "no idea").install()  # every row scores 0: degenerate seed
    callback = WandbCallback(mode="offline", dir=str(tmp_path))
    with pytest.raises(DegenerateSeedError):
        builder(tmp_path).run(START, callbacks=[callback])
    run = read_back(callback)
    assert run["exit_code"] == 1
    assert run["summary"]["error"].startswith("DegenerateSeedError: ")
    assert run["summary"]["completed"] is False


def test_a_failing_wandb_never_breaks_the_run(
    fake_model: FakeModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def no_key(**kwargs: Any) -> None:
        raise wandb.errors.UsageError("No API key configured")

    monkeypatch.setattr(wandb, "init", no_key)
    with caplog.at_level(logging.WARNING):
        result = builder(tmp_path).run(START, callbacks=[WandbCallback(mode="online")])
    assert result.completed
    [warning] = [r.getMessage() for r in caplog.records if "W&B" in r.message]
    assert "on_run_start" in warning and "No API key" in warning


def test_a_run_object_that_raises_on_every_call(
    fake_model: FakeModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Exploding:
        def __getattr__(self, name: str) -> Any:
            raise ConnectionError(f"wandb {name} failed")

    monkeypatch.setattr(wandb, "init", lambda **kwargs: Exploding())
    with caplog.at_level(logging.WARNING):
        result = builder(tmp_path).run(START, callbacks=[WandbCallback()])
    assert result.completed and result.final is not None
    assert any("W&B" in r.message for r in caplog.records)
