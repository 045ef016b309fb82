"""Opt-in LiteLLM tracing into the reflex MLflow run (reflex_mlflow/tracing.py), against a real
sqlite store read back with MLflow's own search.

Each test runs in a subprocess: MLflow tracing starts OpenTelemetry and trace-export threads that
would stay in this process, and a thread inside SQLite when a later test forks deadlocks the
child (tests/test_resume.py forks).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from canaries import URL_CASES


def python(script: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=cwd
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_llm_calls_are_traced_into_the_run(tmp_path: Path, uri: str) -> None:
    """In a subprocess: MLflow tracing starts OpenTelemetry and trace-export threads that would
    stay in this process, and a thread inside SQLite when a later test forks deadlocks the
    child (tests/test_resume.py forks). LiteLLM puts the api_base on every span: redacted."""
    import subprocess
    import sys

    url, redacted, canaries = URL_CASES["sig"]
    script = f"""
import json, sys
sys.path[:0] = {[str(Path(__file__).parent)]!r}
import mlflow
from conftest import make_rows, responder
from test_engine import START
from reflex import PromptOptimizer
from reflex.testing import FakeModel
from reflex_mlflow import MLflowCallback
from pathlib import Path
FakeModel(responder).install()
uri = {uri!r}
result = (
    PromptOptimizer().set_dataset(make_rows()).add_provider("fake", "task", api_base={url!r})
    .add_metric("exact_match").set_reasoning_model("fake/reasoner")
    .set_run_dir(Path({str(tmp_path)!r}))
).run(START, callbacks=[MLflowCallback(tracking_uri=uri, trace_llm_calls=True, row_traces=False)])
client = mlflow.MlflowClient(tracking_uri=uri)
exp = client.get_experiment_by_name("aevyra-reflex")
[run] = client.search_runs([exp.experiment_id])
traces = mlflow.search_traces(locations=[exp.experiment_id], run_id=run.info.run_id,
                              return_type="list")
paid = result.usage["total"]["calls"]
assert run.info.status == "FINISHED", run.info.status
assert paid > 0 and len(traces) == paid, (paid, len(traces))
assert mlflow.active_run() is None
dumped = json.dumps([t.to_dict() for t in traces], default=str)
assert {redacted.split("?")[1]!r} in dumped, "no api_base on the spans"
assert not [c for c in {canaries!r} if c in dumped], "a credential in a trace"
print("traced", len(traces))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "traced" in done.stdout


@pytest.mark.parametrize(
    "callers_uri",
    [
        "same",
        "other",  # a caller on another tracking URI keeps its processors too
    ],
)
def test_a_span_on_the_model_thread_joins_the_run_redacted_and_stop_restores(
    callers_uri: str, tmp_path: Path, uri: str
) -> None:
    """LlmTracing alone: the run is active on the model thread while tracing is on, a span
    there is linked to it with the URL's credentials redacted in its attributes and in its
    events (a provider's error echoes the URL), and stop() ends the run there and gives the
    caller's own span processors back (the caller's set with the run's tracking URI, or with
    another one)."""
    url, redacted, canaries = URL_CASES["sig"]
    script = f"""
import json
import mlflow
from mlflow.entities import SpanEvent
from mlflow.tracing.config import get_config
from reflex.models.runner import LoopRunner
from reflex_mlflow.tracing import LlmTracing

uri, url = {uri!r}, {url!r}
client = mlflow.MlflowClient(tracking_uri=uri)
experiment = client.create_experiment("tracing")
run_id = client.create_run(experiment).info.run_id

def mine(span):
    span.set_attribute("mine", "kept")

mlflow.set_tracking_uri(uri if {callers_uri!r} == "same" else "sqlite:///callers.db")
mlflow.tracing.configure(span_processors=[mine])
tracing = LlmTracing(uri, run_id, urls=[url])
tracing.start()

async def call():  # what a model call does, on the thread every model call of a run runs on
    with mlflow.start_span("completion") as span:
        span.set_attribute("api_base", url)
        error = {{"exception.message": "401 from " + url}}
        span.add_event(SpanEvent("exception", attributes=error))
    return mlflow.active_run().info.run_id

async def active():
    return mlflow.active_run()

assert LoopRunner.shared().run(call()) == run_id
tracing.stop("FINISHED")
assert LoopRunner.shared().run(active()) is None
assert [p.__name__ for p in get_config().span_processors] == ["mine"]
assert client.get_run(run_id).info.status == "FINISHED"
[trace] = mlflow.search_traces(locations=[experiment], run_id=run_id, return_type="list")
[span] = trace.data.spans
assert span.attributes["mine"] == "kept"
assert span.attributes["api_base"] == {redacted!r}
dumped = json.dumps(trace.to_dict(), default=str)
assert {redacted!r} in dumped and "401 from" in dumped
assert not [c for c in {canaries!r} if c in dumped], "a credential in a trace"
print("traced")
"""
    assert "traced" in python(script, tmp_path)
