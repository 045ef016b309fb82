"""MLflowCallback against a real sqlite store, read back with MlflowClient."""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from typing import Any

import pytest
from canaries import URL_CASES
from conftest import make_rows
from mlflow import MlflowClient
from mlflow.utils import rest_utils
from test_engine import START, builder

from reflex import DegenerateSeedError, OptimizationResult, load_dataset
from reflex.testing import FakeModel
from reflex_mlflow import MLflowCallback


def only_run(uri: str, experiment: str = "aevyra-reflex") -> Any:
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None
    runs = [
        r for r in client.search_runs([exp.experiment_id]) if "reflex.evaluation" not in r.data.tags
    ]
    assert len(runs) == 1  # evaluation runs aside
    return runs[0]


def steps(client: MlflowClient, run_id: str, key: str) -> list[tuple[int, float]]:
    return [(m.step, m.value) for m in client.get_metric_history(run_id, key)]


def text(client: MlflowClient, run_id: str, path: str) -> str:
    return Path(client.download_artifacts(run_id, path, tempfile.mkdtemp())).read_text("utf-8")


def table(client: MlflowClient, run_id: str) -> list[dict[str, Any]]:
    """iterations.json: the pandas "split" JSON that mlflow.log_table writes."""
    data = json.loads(text(client, run_id, "iterations.json"))
    return [dict(zip(data["columns"], row, strict=True)) for row in data["data"]]


def artifact_paths(client: MlflowClient, run_id: str, path: str | None = None) -> set[str]:
    found: set[str] = set()
    for info in client.list_artifacts(run_id, path):
        found |= artifact_paths(client, run_id, info.path) if info.is_dir else {info.path}
    return found


def test_full_run_is_logged(fake_model: FakeModel, tmp_path: Path, uri: str) -> None:
    dataset = load_dataset(make_rows(), name="reviews")
    callback = MLflowCallback(
        run_name="opt-1",
        tracking_uri=uri,
        tags={"team": "search"},
        log_prompt_each_iter=True,
        dataset=dataset,
    )
    # priced, so the cost is logged (an unpriced run logs none: unknown, not 0)
    priced = builder(tmp_path).set_dataset(dataset).set_price("fake/task", 1.0, 2.0)
    result = priced.run(START, callbacks=[callback])
    client = MlflowClient(tracking_uri=uri)
    run = only_run(uri)
    run_id = run.info.run_id
    assert run_id == callback.run_id and run.info.status == "FINISHED"
    assert run.info.run_name == "opt-1"

    params = run.data.params
    assert params["strategy"] == "iterative" and params["reasoning_model"] == "fake/reasoner"
    assert params["target_model"] == "fake/task" and params["target_source"] == "fake"
    assert params["metrics"] == "exact_match" and params["dataset_name"] == "reviews"
    assert params["dataset_size"] == "30" and params["seed"] == "0"
    assert params["max_iterations"] == "5" and params["score_threshold"] == "None"
    sizes = result.split_sizes
    assert {params[f"split_size_{k}"] for k in sizes} == {str(v) for v in sizes.values()}

    n = len(result.iterations)
    assert result.baseline is not None and result.final is not None
    assert steps(client, run_id, "score_test") == [
        (0, result.baseline.mean_score),
        (n + 1, result.final.mean_score),
    ]
    assert [s for s, _ in steps(client, run_id, "score_test_exact_match")] == [0, n + 1]
    train = steps(client, run_id, "score_train")
    assert train == [(r.iteration, r.score) for r in result.iterations if r.score is not None]
    assert max(s for s, _ in train) < n + 1  # the final point sits after the curve
    scored = [r for r in result.iterations if r.val_score is not None]
    events = (Path(str(result.run_dir)) / "events.jsonl").read_text().splitlines()
    initial_val = [
        e["mean_score"] for e in map(json.loads, events) if e.get("label") == "val:baseline"
    ]
    assert len(initial_val) == 1  # the val curve starts at the initial prompt's val score
    assert steps(client, run_id, "score_val") == [
        (0, initial_val[0]),
        *((r.iteration, r.val_score) for r in scored),
    ]
    assert len(steps(client, run_id, "score_exact_match")) == len(train)
    tokens = steps(client, run_id, "tokens")
    assert [s for s, _ in tokens] == [r.iteration for r in result.iterations]
    assert tokens[-1][1] > 0 and len(steps(client, run_id, "cost_usd")) == n

    metrics = run.data.metrics
    assert metrics["final_score_test"] == result.final.mean_score == 1.0
    assert metrics["baseline_score"] == result.baseline.mean_score
    assert metrics["improvement"] == pytest.approx(result.improvement)
    assert metrics["improvement_pct"] == pytest.approx(result.improvement_pct)
    assert metrics["total_iterations"] == n and metrics["best_score_train"] == 1.0
    assert metrics["converged"] in (0.0, 1.0) and metrics["total_tokens"] > 0

    tags = run.data.tags
    assert tags["team"] == "search" and tags["reflex.strategy"] == "iterative"
    assert tags["reflex.run_id"] == result.run_id and tags["reflex.completed"] == "true"
    assert tags["mlflow.user"]  # system tags, as the fluent API would set them

    files = artifact_paths(client, run_id)
    best = f"prompts/best_prompt_{result.run_id}.txt"
    assert {
        "iterations.json",
        "result.json",
        best,
        "prompts/initial_prompt.txt",
        "prompts/iter_001.txt",
        "reasoning/iter_001.txt",
    } <= files
    assert text(client, run_id, best) == result.best_prompt
    saved = json.loads(text(client, run_id, "result.json"))
    assert saved["best_prompt"] == result.best_prompt and saved["schema_version"] == 1
    rows = table(client, run_id)
    assert [row["iteration"] for row in rows] == [r.iteration for r in result.iterations]
    assert [row["prompt"] for row in rows] == [r.system_prompt for r in result.iterations]
    assert {"score", "val_score", "reasoning"} <= set(rows[0])
    assert {"path": "iterations.json", "type": "table"} in json.loads(
        tags["mlflow.loggedArtifacts"]
    )

    inputs = run.inputs.dataset_inputs
    contexts = {i.tags[0].value: i.dataset for i in inputs}
    assert set(contexts) == {"train", "val", "test"}
    assert {d.name for d in contexts.values()} == {"reviews"}
    schema = json.loads(contexts["test"].schema)["mlflow_colspec"]
    assert {c["name"] for c in schema} == {"id", "input", "ideal"}


def test_run_error_marks_the_run_failed(tmp_path: Path, uri: str) -> None:
    FakeModel(lambda request: "no idea").install()  # every row scores 0: degenerate seed
    callback = MLflowCallback(tracking_uri=uri)
    with pytest.raises(DegenerateSeedError):
        builder(tmp_path).run(START, callbacks=[callback])
    run = only_run(uri)
    assert run.info.status == "FAILED"
    assert run.data.tags["reflex.error"].startswith("DegenerateSeedError: ")
    assert run.data.tags["reflex.completed"] == "false"
    assert run.data.params["strategy"] == "iterative"
    # the splits are logged at run start, so even a run that fails early shows its dataset
    contexts = sorted(
        tag.value
        for ds in run.inputs.dataset_inputs
        for tag in ds.tags
        if tag.key == "mlflow.data.context"
    )
    assert contexts == ["test", "train", "val"]


def test_a_failing_tracker_never_breaks_the_run(
    fake_model: FakeModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def __getattr__(self, name: str) -> Any:
            raise RuntimeError(f"store exploded in {name}")

    monkeypatch.setattr("reflex_mlflow.callback.MlflowClient", Broken)
    with caplog.at_level(logging.WARNING):
        result = builder(tmp_path).run(START, callbacks=[MLflowCallback()])
    assert result.completed and result.final is not None
    warnings = [r.getMessage() for r in caplog.records if "MLflow logging failed" in r.message]
    assert len(warnings) == 1 and "store exploded" in warnings[0]  # then it switches off


def test_failures_after_start_are_warnings_and_the_run_still_closes(
    fake_model: FakeModel,
    tmp_path: Path,
    uri: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(MlflowClient, "log_artifact", broken)
    with caplog.at_level(logging.WARNING):
        result = builder(tmp_path).run(START, callbacks=[MLflowCallback(tracking_uri=uri)])
    assert result.completed
    hooks = {
        r.getMessage().split(" in ")[1].split()[0]
        for r in caplog.records
        if "disk full" in r.message
    }
    assert {"on_run_start", "on_iteration", "on_run_end"} <= hooks
    run = only_run(uri)
    assert run.info.status == "FINISHED" and "final_score_test" in run.data.metrics


def test_a_tracking_server_that_is_down(
    fake_model: FakeModel,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # MLflow retries a request to a down server for minutes; the callback must not make one.
    asked: list[str] = []

    def no_request(*args: Any, **kwargs: Any) -> Any:
        asked.append(str(kwargs.get("endpoint")))
        raise ConnectionError("the test's tracking server is down")

    monkeypatch.setattr(rest_utils, "http_request", no_request)
    with caplog.at_level(logging.WARNING):
        result = builder(tmp_path).run(
            START, callbacks=[MLflowCallback(tracking_uri="http://u:pw@127.0.0.1:9")]
        )
    assert result.completed and asked == []
    [warning] = [r.getMessage() for r in caplog.records if "MLflow" in r.message]
    assert "unreachable" in warning and "127.0.0.1:9" in warning and "pw" not in warning


def test_tracking_uri_from_the_environment(
    fake_model: FakeModel, tmp_path: Path, uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    builder(tmp_path).run(START, callbacks=[MLflowCallback(experiment_name="from-env")])
    assert only_run(uri, "from-env").info.status == "FINISHED"


def test_no_secret_lands_in_params_tags_or_artifacts(
    fake_model: FakeModel, tmp_path: Path, uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-SECRET-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    opt = builder(tmp_path).add_provider(
        "fake", "task2", api_base=f"http://me:{secret}@localhost:8000/v1?api_key={secret}&x=1"
    )
    callback = MLflowCallback(tracking_uri=uri, tags={"api_key": secret, "note": f"k={secret}"})
    result = opt.run(START, callbacks=[callback])
    run = only_run(uri)
    assert run.data.params["target_source"] == "http://***@localhost:8000/v1?api_key=***&x=1"
    assert "api_key" not in run.data.tags and run.data.tags["note"] == "k=***"
    blobs = [json.dumps(run.data.params), json.dumps(run.data.tags)]
    client = MlflowClient(tracking_uri=uri)
    for path in artifact_paths(client, run.info.run_id):
        blobs.append(text(client, run.info.run_id, path))
    assert result.completed and not any("SECRET" in blob for blob in blobs)


@pytest.mark.parametrize("case", sorted(URL_CASES))
def test_url_credentials_are_redacted_in_params_and_tags(
    case: str, fake_model: FakeModel, tmp_path: Path, uri: str
) -> None:
    url, redacted, canaries = URL_CASES[case]
    opt = builder(tmp_path).add_provider("fake", "task2", api_base=url)
    # A secret-named tag key (broad pattern: `signature` as well as `api_key`) is dropped.
    callback = MLflowCallback(tracking_uri=uri, tags={"team": "search", "x-signature": "S3CRET"})
    opt.run(START, callbacks=[callback])
    run = MlflowClient(tracking_uri=uri).get_run(str(callback.run_id))
    assert run.data.params["target_source"] == redacted
    assert run.data.tags["team"] == "search" and "x-signature" not in run.data.tags
    logged = json.dumps([run.data.params, run.data.tags])
    assert [c for c in canaries if c in logged] == []


def test_register_prompt_links_the_best_prompt(
    fake_model: FakeModel, tmp_path: Path, uri: str
) -> None:
    callback = MLflowCallback(tracking_uri=uri, register_prompt="sentiment")
    result = builder(tmp_path).run(START, callbacks=[callback])
    client = MlflowClient(tracking_uri=uri)
    version = client.load_prompt("prompts:/sentiment/1")
    assert version.template == result.best_prompt
    linked = json.loads(only_run(uri).data.tags["mlflow.linkedPrompts"])
    assert linked == [{"name": "sentiment", "version": "1"}]


def test_continuing_a_run_keeps_steps_after_the_last_iteration(
    fake_model: FakeModel, tmp_path: Path, uri: str
) -> None:
    first = MLflowCallback(tracking_uri=uri)
    one: OptimizationResult = builder(tmp_path).run(START, callbacks=[first])
    again = MLflowCallback(tracking_uri=uri, run_id=first.run_id)
    builder(tmp_path).set_max_iterations(1).run(START, callbacks=[again])
    run = only_run(uri)
    assert run.info.status == "FINISHED"
    client = MlflowClient(tracking_uri=uri)
    final_steps = [s for s, _ in steps(client, run.info.run_id, "score_test")]
    last_iteration = max(s for s, _ in steps(client, run.info.run_id, "score_train"))
    assert final_steps[-1] > last_iteration
    assert len(table(client, run.info.run_id)) == len(one.iterations) + 1


def test_resumed_reflex_run_continues_its_mlflow_run(tmp_path: Path, uri: str) -> None:
    """SIGKILL mid-run, resume: one MLflow run, every iteration once, final after the curve."""
    import os
    import signal

    from test_resume import builder as resume_builder
    from test_resume import reasoner_variants

    from reflex.models.client import load_litellm
    from reflex.testing import FakeRequest

    load_litellm()
    pid = os.fork()
    if pid == 0:  # child: dies at the 60th model call, after some iterations were logged

        def fault(request: FakeRequest, n: int) -> BaseException | None:
            if n >= 60:
                os.kill(os.getpid(), signal.SIGKILL)
            return None

        FakeModel(reasoner_variants, fault=fault).install()
        try:
            resume_builder(tmp_path, "iterative").run(
                START, callbacks=[MLflowCallback(tracking_uri=uri)]
            )
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status)
    client = MlflowClient(tracking_uri=uri)
    before = steps(client, only_run(uri).info.run_id, "score_train")
    assert before  # the killed process had logged iterations
    FakeModel(reasoner_variants).install()
    result = resume_builder(tmp_path, "iterative").run(
        START, callbacks=[MLflowCallback(tracking_uri=uri)], resume=True
    )
    run = only_run(uri)  # continued, not a second run
    assert run.info.status == "FINISHED"
    train_steps = [s for s, _ in steps(client, run.info.run_id, "score_train")]
    assert train_steps == sorted(set(train_steps)) == [r.iteration for r in result.iterations]
    assert [s for s, _ in steps(client, run.info.run_id, "score_test")][-1] > max(train_steps)


def test_an_interrupted_run_is_killed_not_failed(
    fake_model: FakeModel, tmp_path: Path, uri: str
) -> None:
    from reflex import Callback

    class CtrlC(Callback):
        def on_baseline(self, snapshot: Any) -> None:
            raise KeyboardInterrupt  # as if the user pressed Ctrl-C mid-run

    # CallbackDispatcher isolates Exceptions, not KeyboardInterrupt: it reaches the engine.
    with pytest.raises(KeyboardInterrupt):
        builder(tmp_path).run(START, callbacks=[MLflowCallback(tracking_uri=uri), CtrlC()])
    assert only_run(uri).info.status == "KILLED"
