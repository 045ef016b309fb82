"""Why a run stopped and how it ended: enums on the result, never parsed from the text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import make_rows, responder
from pydantic import BaseModel, ConfigDict

from reflex import BudgetExhausted, OptimizationResult, PromptOptimizer, ProviderError
from reflex.api import StrategyContext
from reflex.callbacks.tracking import converged
from reflex.hookspecs import hookimpl
from reflex.result import RunEnd, StopReason
from reflex.run.resume import list_runs
from reflex.testing import FakeModel, FakeRequest

START = "Classify the sentiment."


def builder(run_dir: Path) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(run_dir)
    )


def never_better(request: FakeRequest) -> str:
    """Reasoning proposals that score like the start, so val never improves."""
    if request.model == "fake/reasoner":
        n = len(request.messages) + request.user.count("\n")
        return f"<prompt>{START} Variant {n}.</prompt>"
    return responder(request)


def test_max_iterations(tmp_path: Path) -> None:
    FakeModel(never_better).install()
    result = builder(tmp_path).configure(max_iterations=2, early_stopping_patience=None).run(START)
    assert result.stop is StopReason.MAX_ITERATIONS and result.end_state is RunEnd.COMPLETED
    assert result.stop_reason == "reached max iterations (2)" and result.completed
    assert not converged(result)


def test_early_stopping(tmp_path: Path) -> None:
    FakeModel(never_better).install()
    result = builder(tmp_path).configure(max_iterations=5, early_stopping_patience=2).run(START)
    assert result.stop is StopReason.EARLY_STOPPING and len(result.iterations) == 2
    assert result.end_state is RunEnd.COMPLETED and converged(result)


def test_score_threshold_is_also_in_the_checkpoint(tmp_path: Path) -> None:
    FakeModel(responder).install()
    result = builder(tmp_path).configure(score_threshold=0.9, max_iterations=5).run(START)
    assert result.stop is StopReason.SCORE_THRESHOLD and result.end_state is RunEnd.COMPLETED
    assert converged(result)
    checkpoint = json.loads((Path(str(result.run_dir)) / "checkpoint.json").read_text())
    assert checkpoint["stop"] == "score_threshold"
    assert checkpoint["stop_reason"] == result.stop_reason


def test_budget_that_stops_the_loop_keeps_its_final_but_is_paused(tmp_path: Path) -> None:
    FakeModel(responder).install()
    # preflight 10 + baseline 6 + val 6 + reserve 6 for the final; 30 leaves 2 for iterations.
    result = builder(tmp_path).set_budget(max_calls=30).run(START)
    assert result.stop is StopReason.BUDGET and result.stop_reason.startswith("budget exhausted")
    # Issue 18 item 2: not ``completed`` (the budget stopped it), yet its final is measured.
    assert result.end_state is RunEnd.PAUSED_BUDGET and not result.completed
    assert result.final is not None


def test_budget_that_stops_the_run_has_no_final(tmp_path: Path) -> None:
    FakeModel(responder).install()
    with pytest.raises(BudgetExhausted) as info:
        builder(tmp_path).set_budget(max_calls=12).run(START)
    partial = info.value.partial
    assert isinstance(partial, OptimizationResult) and partial.final is None
    assert partial.stop is StopReason.BUDGET and partial.end_state is RunEnd.BUDGET_STOPPED
    assert not partial.completed
    assert [run.status for run in list_runs(tmp_path)] == ["failed"]


def test_provider_error_is_a_failed_run(tmp_path: Path) -> None:
    import litellm

    def fault(request: FakeRequest, n: int) -> BaseException | None:
        if request.model == "fake/reasoner":
            return litellm.AuthenticationError(message="bad", llm_provider="openai", model="r")
        return None

    FakeModel(responder, fault=fault).install()
    with pytest.raises(ProviderError):
        builder(tmp_path).run(START)
    [run] = list_runs(tmp_path)
    assert run.status == "failed" and run.result is not None
    assert run.result["stop"] == "error" and run.result["end_state"] == "failed"
    assert run.result["stop_reason"].startswith("error: ProviderError")


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")
    then: str = "return"


class _OneShot:
    """One iteration, then: return, set its own stop text, or be interrupted (Ctrl-C)."""

    name: ClassVar[str] = "one_shot"
    Options: ClassVar[type[BaseModel]] = _Options
    requires_reasoning_model: ClassVar[bool] = False

    def __init__(self, options: BaseModel) -> None:
        assert isinstance(options, _Options)
        self.then = options.then

    def optimize(self, ctx: StrategyContext) -> None:
        prompt = f"{ctx.best_prompt} Be brief."
        ctx.record_iteration(prompt, ctx.evaluate(prompt))
        if self.then == "text":
            ctx.stop_reason = "nothing left to try"
        elif self.then == "interrupt":
            raise KeyboardInterrupt


class _Plugin:
    @hookimpl
    def register_strategies(self, register: Any) -> None:
        register(_OneShot)


@pytest.mark.parametrize(
    ("then", "stop", "text", "end"),
    [
        ("return", StopReason.STRATEGY_FINISHED, "strategy finished", RunEnd.COMPLETED),
        ("text", StopReason.STRATEGY_FINISHED, "nothing left to try", RunEnd.COMPLETED),
        ("interrupt", StopReason.INTERRUPTED, None, RunEnd.INTERRUPTED),
    ],
)
def test_strategy_ends(
    register_plugin: Any,
    tmp_path: Path,
    then: str,
    stop: StopReason,
    text: str | None,
    end: RunEnd,
) -> None:
    FakeModel(responder).install()
    register_plugin(_Plugin(), name="one-shot")
    opt = builder(tmp_path).set_strategy("one_shot", then=then).configure(max_iterations=5)
    if end is RunEnd.INTERRUPTED:
        with pytest.raises(KeyboardInterrupt):
            opt.run(START)
        [run] = list_runs(tmp_path)
        assert run.status == "interrupted" and run.result is not None
        result = OptimizationResult.from_dict(run.result)
    else:
        result = opt.run(START)
        assert result.stop_reason == text
    assert result.stop is stop and result.end_state is end


@pytest.mark.parametrize(
    ("record", "end"),
    [
        ({"completed": True, "stop_reason": "reached max iterations (5)"}, RunEnd.COMPLETED),
        ({"completed": False, "stop_reason": "interrupted: KeyboardInterrupt"}, RunEnd.INTERRUPTED),
        ({"completed": False, "stop_reason": "error: ProviderError: x"}, RunEnd.FAILED),
        ({"completed": False, "end_state": "budget_stopped"}, RunEnd.BUDGET_STOPPED),
    ],
)
def test_end_state_of_old_and_new_records(record: dict[str, Any], end: RunEnd) -> None:
    assert RunEnd.of_record(record) is end


def test_enum_values_are_stable() -> None:
    # They are written into result.json and checkpoints: renaming one breaks readers.
    assert {m.value for m in StopReason} == {
        "budget",
        "early_stopping",
        "error",
        "interrupted",
        "max_iterations",
        "score_threshold",
        "strategy_finished",
    }
    # Extended (never renamed): "completed" is RunEnd.SUCCEEDED's value, as it always was.
    assert {m.value for m in RunEnd} == {
        "budget_stopped",
        "completed",
        "failed",
        "interrupted",
        "no_candidate",
        "paused_budget",
    }
    assert [m for m in StopReason if m.per_phase] == [StopReason.EARLY_STOPPING]
