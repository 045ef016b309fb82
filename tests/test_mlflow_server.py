"""Team tracking: four optimize runs log to one MLflow tracking server on PostgreSQL at once.

``services``: tests/services.py starts PostgreSQL in a temporary directory and ``mlflow server
--backend-store-uri postgresql://...``; four ``aevyra-reflex optimize --mlflow-tracking-uri``
processes (models on a local endpoint) run concurrently into an experiment none of them finds
(they create it together), with no MLFLOW_TRACKING_URI in their environment; then every param,
metric history, artifact and prompt-registry link of each is read back with MlflowClient.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import reasoner_answer, task_answer

from reflex.testing.endpoint import ChatRequest, serve

pytestmark = pytest.mark.services
RUNS = 4


def answer(request: ChatRequest) -> str:
    if request.model == "reasoner":
        return reasoner_answer(request)  # type: ignore[arg-type]  # same .user/.system
    return task_answer(request)  # type: ignore[arg-type]


def _optimize(k: int, url: str, tracking: str, tmp: Path, data: Path) -> subprocess.Popen[str]:
    prompt = tmp / "prompt.md"
    prompt.write_text("Classify the sentiment.\n", encoding="utf-8")
    args = [sys.executable, "-c", "from reflex.cli import main; main()", "optimize"]
    args += [str(data), str(prompt)]
    args += ["-m", "openai/task", "--api-base", url, "--reasoning-model", "openai/reasoner"]
    args += ["--reasoning-base-url", url, "--metric", "exact_match", "--seed", str(k)]
    args += ["--max-iterations", "2", "--run-dir", str(tmp / f"run{k}")]
    args += ["--results-json", str(tmp / f"result{k}.json")]
    args += ["--mlflow-tracking-uri", tracking, "--mlflow-run-name", f"team-run-{k}"]
    args += ["--mlflow-experiment", "team", "--mlflow-register-prompt", f"sentiment-{k}"]
    env = {**os.environ, "OPENAI_API_KEY": "sk-none", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    # --mlflow-tracking-uri alone: the prompt-registry link must not need MLFLOW_TRACKING_URI.
    env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.Popen(
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _artifacts(client: Any, run_id: str, path: str | None = None) -> set[str]:
    found: set[str] = set()
    for info in client.list_artifacts(run_id, path):
        found |= _artifacts(client, run_id, info.path) if info.is_dir else {info.path}
    return found


def test_four_concurrent_runs_on_a_postgres_tracking_server(
    mlflow_server: str, dataset_file: Path, tmp_path: Path
) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_server)
    # The experiment "team" does not exist yet: the four runs create it concurrently.
    assert client.get_experiment_by_name("team") is None
    with serve(responder=answer) as url:
        procs = [_optimize(k, str(url), mlflow_server, tmp_path, dataset_file) for k in range(RUNS)]
        outputs = [p.communicate(timeout=900)[0] for p in procs]
    for proc, output in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, output[-2000:]

    experiment = client.get_experiment_by_name("team")
    assert experiment is not None
    found = client.search_runs([experiment.experiment_id])
    runs = {r.info.run_name: r for r in found if "reflex.evaluation" not in r.data.tags}
    assert set(runs) == {f"team-run-{k}" for k in range(RUNS)}
    for k in range(RUNS):
        result = json.loads((tmp_path / f"result{k}.json").read_text(encoding="utf-8"))
        _check_run(client, runs[f"team-run-{k}"], result, k)


def _check_run(client: Any, run: Any, result: dict[str, Any], k: int) -> None:
    run_id = run.info.run_id
    assert run.info.status == "FINISHED"
    params = run.data.params
    assert params["seed"] == str(k) and params["target_model"] == "openai/task"
    assert params["reasoning_model"] == "openai/reasoner" and params["metrics"] == "exact_match"
    assert run.data.tags["reflex.run_id"] == result["run_id"]
    iterations = result["iterations"]
    train = [(m.step, m.value) for m in client.get_metric_history(run_id, "score_train")]
    assert train == [(i["iteration"], i["score"]) for i in iterations if i["score"] is not None]
    final = client.get_metric_history(run_id, "score_test")
    assert [m.value for m in final] == [
        result["baseline"]["mean_score"],
        result["final"]["mean_score"],
    ]
    best = f"prompts/best_prompt_{result['run_id']}.txt"
    assert {"result.json", "iterations.json", best} <= _artifacts(client, run_id)
    with tempfile.TemporaryDirectory() as tmp:
        text = Path(client.download_artifacts(run_id, best, tmp)).read_text(encoding="utf-8")
    assert text == result["best_prompt"]
    prompt = client.load_prompt(f"prompts:/sentiment-{k}/1")
    assert prompt.template == result["best_prompt"]
    linked = json.loads(run.data.tags["mlflow.linkedPrompts"])
    assert linked == [{"name": f"sentiment-{k}", "version": "1"}]
