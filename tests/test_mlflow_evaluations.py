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


def test_rows_reach_an_mlflow_server_over_http(tmp_path: Path) -> None:
    """``mlflow server`` on 127.0.0.1 (one worker, its own process group): a batch's spans go
    over OTLP, its traces from several threads, with their assessments, linked to both runs."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    from reflex_mlflow.connection import bounded_requests

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri"]
    command += [f"sqlite:///{tmp_path / 'server.db'}", "--default-artifact-root"]
    command += [str(tmp_path / "artifacts"), "--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(
        [*command, "--workers", "1"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):  # up to ~2 minutes on a busy machine
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        client = MlflowClient(tracking_uri=url)
        experiment = client.create_experiment("served")
        parent = client.create_run(experiment).info.run_id
        samples = tuple(
            Sample(f"r{i}", "m", "positive", 1.0, scores={"exact_match": 1.0}, latency_ms=5.0)
            for i in range(6)
        )
        shot = EvalSnapshot("Classify.", "test", 1.0, {"exact_match": 1.0}, samples)
        rows = {
            s.example_id: Example(s.example_id, ({"role": "user", "content": "x"},), ideal="pos")
            for s in samples
        }
        with bounded_requests():  # the callback's limits: no retry, 3 s
            writer = RowEvaluations(client, experiment, parent, parallel=4)
            run_id, _ = writer.open("test:final", shot)
            writer.write(run_id, writer.traces(run_id, "test:final", samples, rows, "Classify."))
        found = client.search_traces(locations=[experiment], run_id=run_id)
        assert sorted(t.info.tags[ROW_TAG] for t in found) == [f"r{i}@m" for i in range(6)]
        trace = client.get_trace(found[0].info.trace_id)
        assert {a.name for a in trace.info.assessments} == {"exact_match", "expected_response"}
        assert len(trace.data.spans) == 2
        assert len(client.search_traces(locations=[experiment], run_id=parent)) == 6
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # the whole group: its workers too
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
