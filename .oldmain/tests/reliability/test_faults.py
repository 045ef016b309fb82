"""Provider faults: transient ones are absorbed, permanent ones stop the run at once.

Transient faults go through the local OpenAI-compatible endpoint (``testing.endpoint``) over real
HTTP, so LiteLLM's own error mapping decides what our retry layer sees. Permanent faults (401,
400, context window exceeded) come from ``FakeModel`` raising the LiteLLM exception classes
LiteLLM maps those HTTP answers to: the endpoint injects only transient and malformed faults.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import litellm
import pytest
from conftest import BETTER, make_rows, reasoner_answer, reflex_tasks, responder, task_answer

from reflex import OptimizationResult, PromptOptimizer
from reflex.cli import main
from reflex.models.runner import LoopRunner
from reflex.run.resume import list_runs
from reflex.testing import FakeModel, FakeRequest
from reflex.testing.endpoint import ChatRequest, Endpoint, FaultPlan, serve

START = "Classify the sentiment."
TRANSIENT = ("429", "429-retry-after", "500", "503", "timeout", "drop")
ROWS = make_rows(24)


def answer(request: ChatRequest) -> str:
    """The conftest task and reasoning models, served over HTTP (LiteLLM strips ``openai/``)."""
    fake = FakeRequest(request.model, request.system, request.user, request.messages)
    return reasoner_answer(fake) if request.model == "reasoner" else task_answer(fake)


def run_against(url: Endpoint, run_dir: Path, **budget: Any) -> OptimizationResult:
    return (
        PromptOptimizer()
        .set_dataset(ROWS)
        .add_provider("openai/task", api_base=url)
        .add_metric("exact_match")
        .set_reasoning_model("openai/reasoner", base_url=url)
        .set_budget(**budget)
        .configure(max_iterations=2, run_dir=str(run_dir))
        .run(START)
    )


def events(result: OptimizationResult) -> list[dict[str, Any]]:
    assert result.run_dir is not None
    lines = (Path(result.run_dir) / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def scores(result: OptimizationResult) -> dict[str, Any]:
    assert result.baseline is not None and result.final is not None
    return {
        "baseline": [(s.example_id, s.output, s.score, s.error) for s in result.baseline.samples],
        "final": [(s.example_id, s.output, s.score, s.error) for s in result.final.samples],
        "iterations": [(r.score, r.val_score, r.system_prompt) for r in result.iterations],
    }


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    key = "sk-test-faults-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    return key


def test_transient_faults_change_nothing_but_the_retry_count(tmp_path: Path, api_key: str) -> None:
    with serve(responder=answer) as clean_url:
        clean = run_against(clean_url, tmp_path / "clean")
    plan = FaultPlan(rate=0.3, kinds=TRANSIENT, seed=0, hang=0.2, max_per_request=3)
    with serve(responder=answer, faults=plan) as url:
        faulty = run_against(url, tmp_path / "faulty")
        stats = url.stats()

    assert faulty.completed and clean.completed
    assert faulty.best_prompt == clean.best_prompt == BETTER
    # Nothing scored 0 (or errored) because of a transient failure: every score is identical.
    assert scores(faulty) == scores(clean)
    assert stats.fault_total >= 10 and len(stats.faults) >= 5, stats

    # Usage counted once per answered call: the same totals as the fault-free run, and the
    # endpoint's count of answers; every failed attempt is a retry, none is a call.
    assert faulty.usage["total"]["calls"] == clean.usage["total"]["calls"] == stats.completions
    for key in ("prompt_tokens", "completion_tokens", "cache_hits"):
        assert faulty.usage["total"][key] == clean.usage["total"][key], key
    assert clean.usage["total"]["retries"] == 0
    assert faulty.usage["total"]["retries"] == stats.fault_total

    # The retries are visible in the run's events, with the error each one answered.
    retries = [e for e in events(faulty) if e["type"] == "retry"]
    assert len(retries) == stats.fault_total
    kinds = {e["error"].split(":")[0] for e in retries}
    assert {"RateLimitError", "InternalServerError"} <= kinds, kinds
    assert all(e["model"] in ("openai/task", "openai/reasoner") for e in retries)
    assert faulty.run_dir is not None
    assert api_key not in (Path(faulty.run_dir) / "events.jsonl").read_text(encoding="utf-8")


def test_malformed_and_empty_answers_never_crash(tmp_path: Path, api_key: str) -> None:
    plan = FaultPlan(rate=0.3, kinds=("malformed", "empty"), seed=0, max_per_request=3)
    with serve(responder=answer, faults=plan) as url:
        result = run_against(url, tmp_path)
        stats = url.stats()
    assert stats.faults.get("malformed") and stats.faults.get("empty"), stats
    assert result.completed and result.final is not None
    # A broken body is retried like a 5xx; an empty answer is an answer (scored, not retried).
    retried = [e for e in events(result) if e["type"] == "retry"]
    assert len(retried) == stats.faults["malformed"]


def test_the_budget_holds_under_retries(tmp_path: Path, api_key: str) -> None:
    plan = FaultPlan(rate=0.3, kinds=("429", "500", "drop"), seed=1, max_per_request=3)
    with serve(responder=answer, faults=plan) as url:
        result = run_against(url, tmp_path, max_calls=30)
        stats = url.stats()
    assert result.stop_reason.startswith("budget exhausted"), result.stop_reason
    assert result.usage["metric_calls"] == result.usage["task"]["calls"] <= 30
    assert result.usage["task"]["retries"] > 0
    assert result.usage["total"]["calls"] == stats.completions


# --- permanent faults ---------------------------------------------------------------------------

PermanentFault = Callable[[], BaseException]
PERMANENT: dict[str, tuple[PermanentFault, str]] = {
    "401": (
        lambda: litellm.AuthenticationError(
            message="Incorrect API key provided", llm_provider="openai", model="task"
        ),
        "set the provider's API key in the environment",
    ),
    "400": (
        lambda: litellm.BadRequestError(
            message="Unsupported parameter: 'seed'", llm_provider="openai", model="task"
        ),
        "check the model name, --api-base and the request parameters",
    ),
    "context window exceeded": (
        lambda: litellm.ContextWindowExceededError(
            message="maximum context length is 8192 tokens", llm_provider="openai", model="task"
        ),
        "shorten the prompt or inputs",
    ),
}


def write_inputs(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8"
    )
    (tmp_path / "prompt.md").write_text(START + "\n", encoding="utf-8")


def cli(*extra: str) -> int:
    args = [
        "optimize",
        "data.jsonl",
        "prompt.md",
        "-m",
        "fake/task",
        "--reasoning-model",
        "fake/reasoner",
        "--max-iterations",
        "3",
        "-o",
        "best.md",
        "--results-json",
        "result.json",
        *extra,
    ]
    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


@pytest.mark.parametrize("kind", list(PERMANENT))
def test_permanent_fault_stops_at_once_with_one_line(
    kind: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    make_error, hint = PERMANENT[kind]

    def fault(request: FakeRequest, number: int) -> BaseException | None:
        time.sleep(0.01)  # keep calls in flight together, as over a network
        return make_error() if request.model == "fake/task" else None

    fake = FakeModel(task_answer, fault=fault).install()
    monkeypatch.chdir(tmp_path)
    write_inputs(tmp_path)

    before = reflex_tasks(LoopRunner.shared())
    code = cli("--max-workers", "2")
    err = capsys.readouterr().err

    assert code == 2, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err
    assert "permanent provider error, not retried" in lines[0] and hint in lines[0]
    # At once: only the calls already in flight were made, no retry, and nothing of the run is
    # left on the loop to make one after the error.
    assert len(fake.requests) <= 2
    assert reflex_tasks(LoopRunner.shared()) - before == set()
    # No output as if it succeeded; the run directory says failed and why.
    assert not (tmp_path / "best.md").exists() and not (tmp_path / "result.json").exists()
    [run] = list_runs(tmp_path / ".reflex")
    assert run.status == "failed"
    assert run.result is not None and run.result["completed"] is False
    assert run.result["stop_reason"].startswith("error: ProviderError")
    last = (run.path / "events.jsonl").read_text(encoding="utf-8").splitlines()[-1]
    assert json.loads(last)["type"] == "run_error"


def test_permanent_fault_mid_run_keeps_the_checkpoint_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The first reasoning call suggests a weak prompt; the second meets a revoked key.
    weak = f"{START} Be brief."

    def first_answer(request: FakeRequest) -> str:
        if request.model == "fake/reasoner":
            return f"<prompt>{weak}</prompt>"
        return task_answer(request)

    def revoked_after_one(request: FakeRequest, number: int) -> BaseException | None:
        asked = [r for r in broken.requests if r.model == "fake/reasoner"]
        if request.model == "fake/reasoner" and len(asked) > 1:
            return litellm.AuthenticationError(
                message="Incorrect API key provided", llm_provider="openai", model="reasoner"
            )
        return None

    broken = FakeModel(first_answer, fault=revoked_after_one).install()
    monkeypatch.chdir(tmp_path)
    write_inputs(tmp_path)
    assert cli() == 2
    assert "permanent provider error" in capsys.readouterr().err
    [run] = list_runs(tmp_path / ".reflex")
    assert run.status == "failed" and run.checkpoint is not None
    assert run.checkpoint["iteration"] == 1
    assert run.checkpoint["iterations"][0]["system_prompt"] == weak

    # The key is fixed: --resume continues the same run and replays what was paid from the
    # cache (the first reasoning answer included; a fresh one would make the replay diverge).
    paid_before = {_key(r) for r in broken.requests if r.model == "fake/task"}
    resumed = FakeModel(responder).install()
    assert cli("--resume") == 0, capsys.readouterr().err
    data = json.loads((tmp_path / "result.json").read_text(encoding="utf-8"))
    assert data["completed"] and data["run_id"] == run.run_id
    assert data["iterations"][0]["system_prompt"] == weak
    assert data["best_prompt"] == BETTER
    assert (tmp_path / "best.md").read_text(encoding="utf-8") == BETTER + "\n"
    repaid = [r for r in resumed.requests if r.model == "fake/task" and _key(r) in paid_before]
    assert repaid == []


def _key(request: FakeRequest) -> str:
    return json.dumps(request.messages, sort_keys=True)
