"""What a tracker user sees: the CLI says where the runs went, run names and descriptions,
``--val-ratio``, and the callbacks reference's own example running verbatim on a reasoning-free
strategy (the evaluation table and child runs: tests/test_mlflow_views.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import wandb
from click.testing import CliRunner
from mlflow import MlflowClient
from test_resume import START, builder, reasoner_variants

from reflex.cli import build_cli
from reflex.testing import FakeModel


@pytest.fixture(autouse=True)
def wandb_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    yield


def test_the_cli_says_where_the_runs_went(
    fake_model: FakeModel, tmp_path: Path, uri: str, dataset_file: Path, prompt_file: Path
) -> None:
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
        "--val-ratio",
        "0.3",
        "--mlflow-tracking-uri",
        uri,
        "--wandb-mode",
        "offline",
    ]
    done = CliRunner().invoke(build_cli(), args, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    wandb.teardown()
    [reflex_run] = list((tmp_path / ".reflex" / "runs").iterdir())
    config = json.loads((reflex_run / "config.json").read_text())
    assert config["val_split"] == 0.3  # --val-ratio is --val-split
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("aevyra-reflex")
    assert experiment is not None
    [run] = [
        r
        for r in client.search_runs([experiment.experiment_id])
        if "reflex.evaluation" not in r.data.tags
    ]
    output = done.output
    assert f"MLflow: run {run.info.run_id} in experiment 'aevyra-reflex'" in output
    assert f"mlflow ui --backend-store-uri {uri}" in output
    assert f"#/experiments/{experiment.experiment_id}/runs/{run.info.run_id}" in output
    [sync_dir] = (tmp_path / "wandb_dir" / "wandb").glob("offline-run-*")
    assert f"wandb sync {sync_dir}" in output
    # a name that says what ran, and a description
    assert run.info.run_name == f"iterative-{config['dataset_name']}-{reflex_run.name}"
    assert "iterative" in run.data.tags["mlflow.note.content"]
    saved = json.loads((reflex_run / ".trackers.json").read_text())
    assert saved["mlflow"]["run_id"] == run.info.run_id
    assert sync_dir.name.endswith(saved["wandb"]["run_id"])


def test_help_says_the_store_is_sqlite() -> None:
    done = CliRunner().invoke(build_cli(), ["optimize", "--help"], terminal_width=200)
    text = " ".join(done.output.split())
    assert "--val-split, --val-ratio" in text
    assert "sqlite:///mlflow.db" in text and "file store ./mlruns is deprecated" in text


REFERENCE_CALLBACK = """
class MyCallback:
    def on_run_start(self, config, initial_prompt: str) -> None:
        print(f"Starting {config.strategy} run")

    def on_baseline(self, snapshot) -> None:
        print(f"Baseline: {snapshot.mean_score:.4f}")

    def on_iteration(self, record) -> None:
        print(f"  #{record.iteration} train={record.score:.4f}")

    def on_final(self, snapshot) -> None:
        print(f"Final test: {snapshot.mean_score:.4f}")

    def on_run_end(self, result) -> None:
        print(f"Done. {result.baseline.mean_score:.4f} → {result.final.mean_score:.4f}")
"""


@pytest.mark.parametrize("strategy", ["instructions", "fewshot", "random"])
def test_the_reference_callback_runs_verbatim(
    strategy: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The docs' example formats ``record.score``: it needs a train score every iteration."""
    namespace: dict[str, object] = {}
    exec(REFERENCE_CALLBACK, namespace)  # the documented example, verbatim
    FakeModel(reasoner_variants).install()
    result = builder(tmp_path, strategy).run(START, callbacks=[namespace["MyCallback"]()])
    events = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    failures = [e for e in map(json.loads, events) if e["type"] == "callback_failure"]
    assert failures == []
    printed = capsys.readouterr().out
    assert printed.count(" train=") == len(result.iterations) > 0
    assert "Done." in printed
