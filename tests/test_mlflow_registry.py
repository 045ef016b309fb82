"""reflex_mlflow against a real sqlite store: an experiment created by runs that start together,
and the prompt-registry link made with the callback's own tracking URI (no global one)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import mlflow
import pytest
from conftest import HANG_POLLS
from mlflow import MlflowClient
from mlflow.tracking._tracking_service import utils as tracking_utils
from test_engine import START, builder

import reflex_mlflow.callback
from reflex.testing import FakeModel
from reflex_mlflow import MLflowCallback

WORKERS = 4


@pytest.fixture
def store(template_db: Path, tmp_path: Path) -> str:
    """A store under a name and place MLflow would never pick by default."""
    db = tmp_path / "store" / "team.db"
    db.parent.mkdir()
    shutil.copy(template_db, db)
    return f"sqlite:///{db}"


@pytest.fixture
def no_global_uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """MLFLOW_TRACKING_URI unset and no mlflow.set_tracking_uri: MLflow's default store would
    be ./mlflow.db in the working directory (an empty folder here)."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(tracking_utils, "_tracking_uri", None)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def test_the_prompt_link_needs_only_the_tracking_uri_option(
    fake_model: FakeModel, tmp_path: Path, store: str, no_global_uri: Path
) -> None:
    before = mlflow.get_tracking_uri()
    callback = MLflowCallback(tracking_uri=store, register_prompt="sentiment")
    result = builder(tmp_path / "run").run(START, callbacks=[callback])
    assert result.completed

    client = MlflowClient(tracking_uri=store)
    version = client.load_prompt("prompts:/sentiment/1")
    assert version.template == result.best_prompt
    run = client.get_run(str(callback.run_id))
    assert json.loads(run.data.tags["mlflow.linkedPrompts"]) == [
        {"name": "sentiment", "version": "1"}
    ]
    # The process-global tracking URI is what it was (other code's), and MLflow's default
    # store (./mlflow.db) was never opened; ./mlruns holds the store's artifacts.
    assert mlflow.get_tracking_uri() == before and "MLFLOW_TRACKING_URI" not in os.environ
    assert tracking_utils._tracking_uri is None
    assert not (no_global_uri / "mlflow.db").exists()


class RacingClient(MlflowClient):
    """A real client whose first look-up misses an experiment another process creates right
    after it: the interleaving of two runs starting in a new experiment at once."""

    raced: ClassVar[list[str]] = []

    def get_experiment_by_name(self, name: str) -> Any:
        found = super().get_experiment_by_name(name)
        if found is None and not self.raced:
            self.raced.append(MlflowClient(tracking_uri=self.tracking_uri).create_experiment(name))
        return found


def test_an_experiment_created_between_look_up_and_create(
    fake_model: FakeModel, tmp_path: Path, store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(RacingClient, "raced", [])
    monkeypatch.setattr(reflex_mlflow.callback, "MlflowClient", RacingClient)
    callback = MLflowCallback(tracking_uri=store, experiment_name="fresh")
    builder(tmp_path / "run").run(START, callbacks=[callback])
    assert len(RacingClient.raced) == 1  # the other process won the create
    assert callback.run_id is not None and callback.experiment_id == RacingClient.raced[0]
    run = MlflowClient(tracking_uri=store).get_run(callback.run_id)
    assert run.info.status == "FINISHED" and run.info.experiment_id == RacingClient.raced[0]


WORKER = """
import json, sys, time
from pathlib import Path
from mlflow import MlflowClient
from reflex import PromptOptimizer
from reflex_mlflow import MLflowCallback

uri, run_dir, ready, gate = sys.argv[1:5]
config = (
    PromptOptimizer()
    .set_dataset([{"id": "a", "input": "x", "ideal": "y"}])
    .add_provider("fake", "task")
    .add_metric("exact_match")
    .set_run_dir(run_dir)
    .build_config()
)
callback = MLflowCallback(tracking_uri=uri, experiment_name="fresh")
assert MlflowClient(tracking_uri=uri).get_experiment_by_name("fresh") is None  # store opened
Path(ready).touch()
for _ in range(int(sys.argv[5])):
    if Path(gate).exists():
        break
    time.sleep(0.01)
time.sleep(max(0.0, float(Path(gate).read_text()) - time.time()))  # all start at one moment
callback.on_run_start(config, "Say the word.")
print(json.dumps({"run_id": callback.run_id, "experiment_id": callback.experiment_id}))
"""


def test_runs_in_several_processes_create_one_experiment(tmp_path: Path, store: str) -> None:
    """Four processes start a run in the same new experiment at the same moment."""
    gate = tmp_path / "go"
    procs = []
    for k in range(WORKERS):
        args = [sys.executable, "-c", WORKER, store, str(tmp_path / f"run{k}")]
        args += [str(tmp_path / f"ready{k}"), str(gate), str(HANG_POLLS)]
        procs.append(
            subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    for _ in range(HANG_POLLS):  # every worker has imported MLflow and waits at the gate
        if all((tmp_path / f"ready{k}").exists() for k in range(WORKERS)):
            break
        time.sleep(0.01)
    moment = tmp_path / "go.tmp"
    moment.write_text(repr(time.time() + 0.5))  # the moment they all start at
    os.replace(moment, gate)
    outputs = [p.communicate(timeout=600) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err[-2000:]
    started = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert all(s["run_id"] for s in started), [err[-1500:] for _, err in outputs]

    client = MlflowClient(tracking_uri=store)
    fresh = [e for e in client.search_experiments() if e.name == "fresh"]
    assert len(fresh) == 1
    assert {s["experiment_id"] for s in started} == {fresh[0].experiment_id}
    runs = [
        r
        for r in client.search_runs([fresh[0].experiment_id])
        if "reflex.evaluation" not in r.data.tags
    ]
    assert {r.info.run_id for r in runs} == {s["run_id"] for s in started}
