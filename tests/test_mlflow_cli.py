"""The ``mlflow`` plugin's command-line side (reflex_mlflow/cli.py): the ``--mlflow*`` options of
``optimize`` parsed by click, turned into an ``MLflowCallback``, and a run from the command line
read back from a real sqlite store with MlflowClient."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import wandb
from click.testing import CliRunner
from conftest import parsed_options
from test_mlflow_callback import only_run
from wandb_reader import load_run

from reflex.cli import build_cli
from reflex.testing import FakeModel
from reflex_mlflow import MLflowCallback
from reflex_mlflow.cli import OPTIONS, to_callbacks


def parsed(*args: str) -> dict[str, Any]:
    """The options' values as the command line hands them to ``to_callbacks``."""
    return parsed_options(OPTIONS, *args)


def test_no_mlflow_option_means_no_callback() -> None:
    assert to_callbacks(parsed()) == []


def test_any_mlflow_option_turns_it_on_with_the_defaults() -> None:
    for args in (["--mlflow"], ["--mlflow-trace"], ["--mlflow-tag", "a=b"]):
        [callback] = to_callbacks(parsed(*args))
        assert isinstance(callback, MLflowCallback), args
        assert callback.experiment_name == "aevyra-reflex" and callback.tracking_uri is None
        assert callback.row_traces is True and callback.child_runs is False


def test_every_option_reaches_the_callback(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    [callback] = to_callbacks(
        parsed(
            *["--mlflow-experiment", "nightly", "--mlflow-tracking-uri", uri],
            *["--mlflow-run-name", "r1", "--mlflow-tag", "team=search", "--mlflow-tag", "k=v=w"],
            *["--mlflow-log-prompts", "--mlflow-trace", "--mlflow-child-runs"],
            *["--no-mlflow-row-traces", "--mlflow-register-prompt", "sentiment"],
        )
    )
    assert isinstance(callback, MLflowCallback)
    assert (callback.experiment_name, callback.tracking_uri, callback.run_name) == (
        "nightly",
        uri,
        "r1",
    )
    assert callback.tags == {"team": "search", "k": "v=w"}
    assert callback.log_prompt_each_iter and callback.trace_llm_calls and callback.child_runs
    assert callback.row_traces is False and callback.register_prompt == "sentiment"


def test_cli_rejects_a_bad_tag_and_keeps_help_light(dataset_file: Path, prompt_file: Path) -> None:
    args = [
        "optimize",
        str(dataset_file),
        str(prompt_file),
        "-m",
        "fake/task",
        "--mlflow-tag",
        "no-equals-sign",
    ]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 2 and "KEY=VALUE" in result.output
    code = (
        "import sys; from reflex.cli import build_cli; build_cli(); "
        "sys.exit(int('mlflow' in sys.modules or 'wandb' in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_both_trackers_from_the_cli(
    fake_model: FakeModel,
    tmp_path: Path,
    uri: str,
    dataset_file: Path,
    prompt_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    args = [
        "optimize",
        str(dataset_file),
        str(prompt_file),
        "-m",
        "fake/task",
        "--metric",
        "exact_match",
        "--reasoning-model",
        "fake/reasoner",
        "--run-dir",
        str(tmp_path / ".reflex"),
        "--mlflow-tracking-uri",
        uri,
        "--mlflow-tag",
        "team=search",
        "--wandb-mode",
        "offline",
        "--wandb-tag",
        "cli",
    ]
    result = CliRunner().invoke(build_cli(), args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    run = only_run(uri)
    assert run.info.status == "FINISHED" and run.data.tags["team"] == "search"
    assert "final_score_test" in run.data.metrics
    wandb.teardown()  # flush the .wandb file before reading it
    [sync_dir] = (tmp_path / "wandb_dir" / "wandb").glob("offline-run-*")
    wandb_run = load_run(str(sync_dir))
    assert wandb_run["exit_code"] == 0 and "cli" in wandb_run["tags"]
    assert wandb_run["summary"]["final_score_test"] == run.data.metrics["final_score_test"]
