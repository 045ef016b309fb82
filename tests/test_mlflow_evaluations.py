"""Evaluation runs and their row traces on a real sqlite store (``reflex_mlflow.evaluations``):
batches within MLflow's link limit, one evaluation run per label reused on a second open, the
rows already written found by their tags."""

from __future__ import annotations

from pathlib import Path

from mlflow import MlflowClient

from reflex.api import EvalSnapshot, Example, Sample
from reflex_mlflow.evaluations import ROW_TAG, RowEvaluations, batches


def test_batches_stay_within_the_link_limit() -> None:
    assert [len(b) for b in batches(list(range(10)), 4)] == [4, 4, 2]
    assert [len(b) for b in batches(list(range(250)), 500)] == [100, 100, 50]
    assert [len(b) for b in batches(list(range(3)), 0)] == [1, 1, 1]


def test_an_evaluation_run_is_opened_once_and_its_rows_are_found(tmp_path: Path) -> None:
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.create_experiment("e", artifact_location=str(tmp_path / "a"))
    parent = client.create_run(experiment).info.run_id
    samples = tuple(
        Sample(f"r{i}", "m", "positive", 1.0, scores={"exact_match": 1.0}) for i in range(5)
    )
    shot = EvalSnapshot("Classify.", "test", 1.0, {"exact_match": 1.0}, samples)
    rows = {
        s.example_id: Example(s.example_id, ({"role": "user", "content": "x"},)) for s in samples
    }
    writer = RowEvaluations(client, experiment, parent, reflex_run_id="abc")
    run_id, created = writer.open("test:final", shot)
    assert created and writer.open("test:final", shot) == (run_id, False)
    run = client.get_run(run_id)
    assert run.data.tags["mlflow.parentRunId"] == parent and "reflex.run_id" not in run.data.tags
    assert run.data.metrics == {"exact_match/mean": 1.0, "score/mean": 1.0}
    written = writer.traces(run_id, "test:final", samples[:3], rows, shot.system_prompt)
    writer.write(run_id, written)
    assert writer.logged(run_id) == {"r0@m", "r1@m", "r2@m"}
    found = client.search_traces(locations=[experiment], run_id=parent)
    assert sorted(t.info.tags[ROW_TAG] for t in found) == ["r0@m", "r1@m", "r2@m"]
    assert {t.info.tags["reflex.run_id"] for t in found} == {"abc"}
