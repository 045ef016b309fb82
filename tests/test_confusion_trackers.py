"""A label task's confusion matrices in the trackers: a real sqlite MLflow store read back with
MlflowClient, and an offline W&B run read back from its files; the same counts the report
shows (``confusion_matrices``), one answered label taking most rows included."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_report_rows import ROWS, one_label, run_label_task

from reflex.api.tracking import confusion_matrices
from reflex.checks.confusion import OTHER
from reflex.result import OptimizationResult
from reflex.testing import FakeModel

mlflow = pytest.importorskip("mlflow")
wandb = pytest.importorskip("wandb")


@pytest.fixture
def wandb_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_ERROR_REPORTING", "false")
    yield
    wandb.teardown()


def _expected(run: Path) -> dict[str, list[dict[str, object]]]:
    data = json.loads((run / "result.json").read_text(encoding="utf-8"))
    result = OptimizationResult.from_dict({**data, "run_dir": str(run)})
    return {side: m.rows() for side, m in confusion_matrices(result).items()}


def test_matrices_go_to_mlflow_and_wandb(tmp_path: Path, wandb_env: None) -> None:
    from mlflow import MlflowClient
    from wandb_reader import load_run

    from reflex_mlflow import MLflowCallback
    from reflex_wandb import WandbCallback

    FakeModel(one_label).install()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    trackers = [
        MLflowCallback(tracking_uri=uri),
        WandbCallback(mode="offline", dir=str(tmp_path / "wb")),
    ]
    run, _ = run_label_task(tmp_path, ROWS, trackers)
    expected = _expected(run)
    assert list(expected) == ["baseline", "final"]
    n = json.loads((run / "result.json").read_text(encoding="utf-8"))["split_sizes"]["test"]
    # The winner answered "positive" for every row: one column holds all of them.
    assert sum(int(str(row["answered: positive"])) for row in expected["final"]) == n
    assert all(row.get(f"answered: {OTHER}") is None for row in expected["final"])

    client = MlflowClient(tracking_uri=uri)
    found = client.search_runs([client.get_experiment_by_name("aevyra-reflex").experiment_id])
    (logged,) = [
        r for r in found if "reflex.evaluation" not in r.data.tags
    ]  # evaluation runs aside
    for side, rows in expected.items():
        local = client.download_artifacts(
            logged.info.run_id, f"confusion_{side}.json", str(tmp_path / "dl" / side)
        )
        table = json.loads(Path(local).read_text(encoding="utf-8"))
        got = [dict(zip(table["columns"], values, strict=True)) for values in table["data"]]
        assert got == [pytest.approx(row) for row in rows]  # pandas writes 10 digits
    tables = json.loads(logged.data.tags["mlflow.loggedArtifacts"])
    assert {"path": "confusion_final.json", "type": "table"} in tables

    callback = trackers[1]
    assert isinstance(callback, WandbCallback) and callback.run is not None
    sync_dir = callback.run.settings.sync_dir
    wandb.teardown()
    summary = load_run(sync_dir)["summary"]
    for side, rows in expected.items():
        entry: dict[str, Any] = summary[f"confusion_{side}"]
        assert entry["_type"] == "table-file" and entry["nrows"] == len(rows)
        (path,) = Path(sync_dir).rglob(Path(entry["path"]).name)
        table = json.loads(path.read_text(encoding="utf-8"))
        got = [dict(zip(table["columns"], values, strict=True)) for values in table["data"]]
        assert got == [pytest.approx(row) for row in rows]


def test_no_matrix_for_a_free_text_task(tmp_path: Path) -> None:
    rows = [{**row, "ideal": f"{row['input']} is {row['ideal']}"} for row in ROWS]
    answers = {row["input"]: str(row["ideal"]) for row in rows}
    FakeModel(lambda request: answers.get(request.user, "ok")).install()
    run, _ = run_label_task(tmp_path, rows)
    assert _expected(run) == {}
