"""What the MLflow UI shows beyond params and metrics (reflex_mlflow/views.py): the per-example
evaluation table, marked as a table, and one child run per candidate; read back with
MlflowClient from a real store."""

from __future__ import annotations

import json
from pathlib import Path

from mlflow import MlflowClient
from test_resume import START, builder, reasoner_variants

from reflex.testing import FakeModel
from reflex_mlflow import MLflowCallback


def test_evaluation_table_and_child_runs(tmp_path: Path, uri: str, dataset_file: Path) -> None:
    FakeModel(reasoner_variants).install()
    callback = MLflowCallback(tracking_uri=uri, child_runs=True)
    result = (
        builder(tmp_path / "runs", "iterative")
        .set_dataset(str(dataset_file))
        .run(START, callbacks=[callback])
    )
    assert result.final is not None and result.baseline is not None
    client = MlflowClient(tracking_uri=uri)
    run_id = str(callback.run_id)
    local = client.download_artifacts(run_id, "evaluation.json", str(tmp_path / "dl"))
    table = json.loads(Path(local).read_text())
    rows = [dict(zip(table["columns"], row, strict=True)) for row in table["data"]]
    assert len(rows) == len(result.final.samples)
    data = {
        json.loads(line)["id"]: json.loads(line) for line in dataset_file.read_text().splitlines()
    }
    final = {s.example_id: s for s in result.final.samples}
    base = {s.example_id: s for s in result.baseline.samples}
    for row in rows:
        example = data[row["example_id"]]
        assert row["input"] == example["input"] and row["expected"] == example["ideal"]
        assert row["final_output"] == final[row["example_id"]].output
        assert row["baseline_output"] == base[row["example_id"]].output
        assert row["final_exact_match"] == final[row["example_id"]].scores["exact_match"]
    tags = client.get_run(run_id).data.tags
    assert {"path": "evaluation.json", "type": "table"} in json.loads(
        tags["mlflow.loggedArtifacts"]
    )
    experiment = client.get_run(run_id).info.experiment_id
    children = [
        r
        for r in client.search_runs(
            [experiment], filter_string=f"tags.`mlflow.parentRunId` = '{run_id}'"
        )
        if "reflex.evaluation" not in r.data.tags  # a candidate's, not an evaluation's
    ]
    assert len(children) == len(result.iterations)
    by_iteration = {int(c.data.params["iteration"]): c for c in children}
    for record in result.iterations:
        child = by_iteration[record.iteration]
        assert child.data.params["phase"] == record.phase
        assert child.data.params["prompt_version"] and child.data.params["parent_version"]
        if record.score is not None:
            assert child.data.metrics["score_train"] == record.score
        if record.val_score is not None:
            assert child.data.metrics["score_val"] == record.val_score
