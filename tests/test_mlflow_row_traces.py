"""Per-row evaluations in MLflow against a real sqlite store, read back with MlflowClient and
``mlflow.search_traces``: each test row of the baseline and the final (and each val row of the
winner) is a trace with its scores as assessments, in an evaluation run under the reflex run,
linked to both; a resumed sync writes only what is missing; a dead server costs the breaker two
batches."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import mlflow
import pytest
from conftest import make_rows
from mlflow import MlflowClient
from mlflow.entities import Trace
from test_engine import START, builder

from reflex import OptimizationResult, load_dataset
from reflex.run.trackers import replay_run, save_tracker_state, tracker_state
from reflex.testing import FakeModel
from reflex_mlflow import MLflowCallback
from reflex_mlflow.evaluations import EVALUATION_TAG, ROW_TAG


def eval_runs(client: MlflowClient, run_id: str) -> dict[str, Any]:
    """The reflex run's evaluation runs by their evaluation label."""
    experiment = client.get_run(run_id).info.experiment_id
    runs = client.search_runs([experiment], f"tags.`mlflow.parentRunId` = '{run_id}'")
    return {r.data.tags[EVALUATION_TAG]: r for r in runs if EVALUATION_TAG in r.data.tags}


def traces_of(uri: str, run_id: str) -> list[Trace]:
    mlflow.set_tracking_uri(uri)
    experiment = MlflowClient(tracking_uri=uri).get_run(run_id).info.experiment_id
    found = mlflow.search_traces(
        locations=[experiment], run_id=run_id, return_type="list", max_results=1000
    )
    assert isinstance(found, list)
    return found


def by_name(trace: Trace) -> dict[str, Any]:
    return {a.name: a for a in trace.info.assessments}


def run_logged(tmp_path: Path, uri: str, **options: Any) -> tuple[OptimizationResult, str]:
    dataset = load_dataset(make_rows(), name="reviews")
    callback = MLflowCallback(tracking_uri=uri, dataset=dataset, **options)
    result = builder(tmp_path).set_dataset(dataset).run(START, callbacks=[callback])
    return result, str(callback.run_id)


def test_each_test_row_is_a_trace_with_assessments(
    fake_model: FakeModel, tmp_path: Path, uri: str
) -> None:
    result, run_id = run_logged(tmp_path, uri)
    client = MlflowClient(tracking_uri=uri)
    runs = eval_runs(client, run_id)
    assert set(runs) == {"test:baseline", "test:final", "val:winner"}
    assert result.baseline is not None and result.final is not None
    for label, snapshot in (("test:baseline", result.baseline), ("test:final", result.final)):
        run = runs[label]
        assert run.data.tags["mlflow.runType"] == "genai_evaluate"
        assert run.data.metrics["score/mean"] == snapshot.mean_score
        assert run.data.metrics["exact_match/mean"] == snapshot.scores_by_metric["exact_match"]
        traces = traces_of(uri, run.info.run_id)
        samples = {s.key: s for s in snapshot.samples}
        assert sorted(t.info.tags[ROW_TAG] for t in traces) == sorted(samples)
        for trace in traces:
            sample = samples[trace.info.tags[ROW_TAG]]
            assert trace.info.trace_metadata["mlflow.sourceRun"] == run.info.run_id
            assessed = by_name(trace)
            assert assessed["exact_match"].value == sample.scores["exact_match"]
            assert assessed["exact_match"].metadata["mlflow.assessment.sourceRunId"] == (
                run.info.run_id
            )
            row = next(r for r in make_rows() if r["id"] == sample.example_id)
            assert assessed["expected_response"].value == row["ideal"]
            root, task = trace.data.spans
            assert root.inputs == {
                "example_id": sample.example_id,
                "input": row["input"],
                "model": "fake/task",
            }
            assert root.outputs == sample.output == task.outputs
            messages = task.inputs["messages"]
            assert messages[0] == {"role": "system", "content": snapshot.system_prompt}
            assert messages[-1]["content"] == row["input"]
            assert trace.info.token_usage is not None and trace.info.token_usage["total_tokens"] > 0
            assert trace.info.execution_duration is not None
    # every row is linked to the reflex run too; the final's rows say which flipped
    assert len(traces_of(uri, run_id)) == 2 * len(result.final.samples) + len(
        traces_of(uri, runs["val:winner"].info.run_id)
    )
    base = {s.key: s.score for s in result.baseline.samples}
    finals = traces_of(uri, runs["test:final"].info.run_id)
    flipped = {t.info.tags[ROW_TAG] for t in finals if t.info.tags["reflex.change"] == "improved"}
    assert flipped == {s.key for s in result.final.samples if (s.score or 0) > (base[s.key] or 0)}
    assert flipped  # the fake model's winner fixes rows the baseline got wrong
    assert tracker_state(Path(str(result.run_dir)), "mlflow")["row_traces"] == sorted(runs)


def test_the_winners_val_rows_are_its_val_evaluation(
    fake_model: FakeModel, tmp_path: Path, uri: str
) -> None:
    result, run_id = run_logged(tmp_path, uri)
    client = MlflowClient(tracking_uri=uri)
    winner = eval_runs(client, run_id)["val:winner"]
    assert client.get_run(winner.info.run_id).data.metrics["score/mean"] == result.best_score_val
    prompt = Path(client.download_artifacts(winner.info.run_id, "prompt.txt", str(tmp_path)))
    assert prompt.read_text() == result.best_prompt
    assert len(traces_of(uri, winner.info.run_id)) == result.split_sizes["val"]


def test_row_traces_off(fake_model: FakeModel, tmp_path: Path, uri: str) -> None:
    result, run_id = run_logged(tmp_path, uri, row_traces=False)
    assert eval_runs(MlflowClient(tracking_uri=uri), run_id) == {}
    assert traces_of(uri, run_id) == []
    assert "row_traces" not in tracker_state(Path(str(result.run_dir)), "mlflow")


def test_a_sync_writes_only_the_rows_that_did_not_land(
    fake_model: FakeModel, tmp_path: Path, uri: str
) -> None:
    result, run_id = run_logged(tmp_path, uri)
    client = MlflowClient(tracking_uri=uri)
    final = eval_runs(client, run_id)["test:final"].info.run_id
    lost = traces_of(uri, final)[:3]
    client.delete_traces(
        experiment_id=lost[0].info.experiment_id, trace_ids=[t.info.trace_id for t in lost]
    )
    run = Path(str(result.run_dir))
    save_tracker_state(run, "mlflow", row_traces=["test:baseline", "val:winner"], missed=True)
    before = len(traces_of(uri, run_id))
    again = MLflowCallback(tracking_uri=uri)
    replay_run(run, [again])
    assert again.run_id == run_id and again.missed() == []
    rows = traces_of(uri, final)
    assert result.final is not None
    assert sorted(t.info.tags[ROW_TAG] for t in rows) == sorted(s.key for s in result.final.samples)
    assert len(traces_of(uri, run_id)) == before + 3  # the three lost rows, nothing twice
    assert set(eval_runs(client, run_id)) == {"test:baseline", "test:final", "val:winner"}
    assert "missed" not in json.loads((run / ".trackers.json").read_text())["mlflow"]


def dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_server_that_dies_costs_two_batches(
    fake_model: FakeModel, tmp_path: Path, uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's MLflow run exists; then every request fails as on a dead server: the rows'
    batches stop at the breaker (two failed calls), the rest is left for sync."""
    dataset = load_dataset(make_rows(60), name="reviews")
    callback = MLflowCallback(tracking_uri=uri, dataset=dataset)
    calls: list[str] = []

    def refused(*args: Any, **kwargs: Any) -> Any:
        calls.append("log_spans")
        raise ConnectionError(f"Connection refused: 127.0.0.1:{dead_port()}")

    from mlflow.tracing.client import TracingClient

    monkeypatch.setattr(TracingClient, "log_spans", refused)
    result = builder(tmp_path, make_rows(60)).set_max_workers(2).run(START, callbacks=[callback])
    assert result.completed
    assert len(calls) == 2  # two batches of two rows, then the breaker: no call per row
    assert callback._off and callback.missed()
    state = tracker_state(Path(str(result.run_dir)), "mlflow")
    assert state["missed"] is True and "row_traces" not in state


def test_the_cli_switch(
    fake_model: FakeModel, tmp_path: Path, uri: str, dataset_file: Path, prompt_file: Path
) -> None:
    """``--no-mlflow-row-traces`` reaches the callback; without it the rows are logged."""
    from click.testing import CliRunner

    from reflex.cli import build_cli

    def optimize(*flags: str) -> str:
        args = ["optimize", str(dataset_file), str(prompt_file), "-m", "fake/task"]
        args += ["--reasoning-model", "fake/reasoner", "--max-iterations", "1"]
        args += ["--run-dir", str(tmp_path / "rd"), "--mlflow-tracking-uri", uri, *flags]
        done = CliRunner().invoke(build_cli(), args)
        assert done.exit_code == 0, done.output
        client = MlflowClient(tracking_uri=uri)
        experiment = client.get_experiment_by_name("aevyra-reflex")
        assert experiment is not None
        runs = client.search_runs([experiment.experiment_id], order_by=["start_time DESC"])
        return next(r.info.run_id for r in runs if EVALUATION_TAG not in r.data.tags)

    quiet = optimize("--no-mlflow-row-traces")
    assert eval_runs(MlflowClient(tracking_uri=uri), quiet) == {}
    logged = optimize()
    assert set(eval_runs(MlflowClient(tracking_uri=uri), logged)) >= {"test:baseline", "test:final"}


@pytest.mark.services
def test_row_traces_with_assessments_on_an_mlflow_server_on_postgresql(
    fake_model: FakeModel, tmp_path: Path, mlflow_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same per-row traces against ``mlflow server`` on PostgreSQL (``.ci/services``),
    read back with MlflowClient and ``search_traces`` over HTTP."""
    monkeypatch.chdir(tmp_path)
    experiment = f"rows-{tmp_path.name}"  # the server lives for the session
    result, run_id = run_logged(tmp_path, mlflow_server, experiment_name=experiment)
    assert result.final is not None
    runs = eval_runs(MlflowClient(tracking_uri=mlflow_server), run_id)
    assert set(runs) == {"test:baseline", "test:final", "val:winner"}
    traces = traces_of(mlflow_server, runs["test:final"].info.run_id)
    samples = {s.key: s for s in result.final.samples}
    assert sorted(t.info.tags[ROW_TAG] for t in traces) == sorted(samples)
    for trace in traces:
        sample = samples[trace.info.tags[ROW_TAG]]
        assessed = by_name(trace)
        assert assessed["exact_match"].value == sample.scores["exact_match"]
        row = next(r for r in make_rows() if r["id"] == sample.example_id)
        assert assessed["expected_response"].value == row["ideal"]
