"""The acceptance evidence and the constant-answer check in real trackers: a sqlite MLflow store
read back with MlflowClient, an offline W&B run read back from its ``.wandb`` file; and in the
console summary."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
import wandb
from conftest import KEYWORD
from mlflow import MlflowClient
from rich.console import Console
from test_acceptance import START, _listed, answer, builder  # noqa: F401 (_listed: a fixture)
from wandb_reader import load_run

from reflex.cli.console import print_summary
from reflex.testing import FakeModel
from reflex_mlflow import MLflowCallback
from reflex_wandb import WandbCallback


@pytest.fixture(autouse=True)
def wandb_env(tmp_path: Path) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
            mp.setenv(name, str(tmp_path / "wandb-home" / name.lower()))
        mp.setenv("WANDB_SILENT", "true")
        mp.setenv("WANDB_ERROR_REPORTING", "false")
        yield


pytestmark = pytest.mark.usefixtures("_listed")


def test_the_evidence_lands_in_mlflow_and_wandb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    FakeModel(answer).install()
    mlflow_cb = MLflowCallback(tracking_uri=uri)
    wandb_cb = WandbCallback(mode="offline", dir=str(tmp_path))
    prompts = [f"{START} FIX 1", f"{START} {KEYWORD}"]
    result = builder(tmp_path / "runs", prompts, "significant", rows=60).run(
        START, callbacks=[mlflow_cb, wandb_cb]
    )
    first, second = result.iterations
    assert first.evidence is not None and second.evidence is not None
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(str(mlflow_cb.run_id))
    assert run.data.params["accept"] == "significant"
    history = {m.step: m.value for m in client.get_metric_history(run.info.run_id, "accept_p")}
    assert history == pytest.approx({1: first.evidence["p"], 2: second.evidence["p"]})
    passed = client.get_metric_history(run.info.run_id, "accept_passed")
    assert [(m.step, m.value) for m in passed] == [(1, 0.0), (2, 1.0)]
    assert result.selection is not None and result.label_check is not None
    assert run.data.metrics["selection_p"] == pytest.approx(result.selection["p"])
    assert run.data.metrics["constant_test"] == pytest.approx(result.label_check["constant"])
    assert run.data.metrics["trivial_winner"] == 0.0
    wandb.teardown()
    stored = load_run(str(Path(wandb_cb.run.settings.sync_dir)))
    assert stored["config"]["accept"] == "significant"
    rows = {row["iteration"]: row for row in stored["history"] if "accept_p" in row}
    assert rows[2]["accept_p"] == pytest.approx(second.evidence["p"])
    assert rows[2]["beats_constant_val"] == 1.0
    assert stored["summary"]["selection_p"] == pytest.approx(result.selection["p"])
    assert stored["summary"]["label_accuracy_test"] == pytest.approx(result.label_check["accuracy"])


def test_the_summary_prints_the_correction_and_the_constant(tmp_path: Path) -> None:
    FakeModel(answer).install()
    result = builder(tmp_path, [f"{START} ALWAYS"], "any", rows=60).run(START)
    out = io.StringIO()
    print_summary(result, Console(file=out, width=300))
    text = out.getvalue()
    assert "best of many (val)" in text and "among 1 candidates" in text
    assert "vs constant (test)" in text and "does NOT beat it" in text
    assert "trivial_winner" in text
