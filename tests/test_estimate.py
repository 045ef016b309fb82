"""The plan's estimates (reflex.run.estimate): reasoning and judge calls, workers, notes."""

from __future__ import annotations

from pathlib import Path

from conftest import make_rows, responder

from reflex import PromptOptimizer
from reflex.testing import FakeModel, FakeRequest

START = "Classify the sentiment."


def _no_call(request: FakeRequest, n: int) -> BaseException | None:
    raise AssertionError("a plan made a call")


def _builder(tmp_path: Path, strategy: str) -> PromptOptimizer:
    FakeModel(responder, fault=_no_call).install()
    return (
        PromptOptimizer()
        .set_dataset(make_rows(100))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy(strategy)
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path)
        .configure(max_iterations=6)
    )


def test_a_reasoning_strategy_asks_once_per_candidate(tmp_path: Path) -> None:
    plan = _builder(tmp_path, "iterative").plan(START)
    search = plan.phases[2]
    assert plan.candidates == 6 and search.reasoning_calls == 6
    assert search.seconds >= 6 * 10  # 10 s a reasoning call, assumed


def test_auto_with_a_reasoning_model_asks_for_a_third_and_the_limit_caps(tmp_path: Path) -> None:
    assert _builder(tmp_path, "auto").plan(START).phases[2].reasoning_calls == 2
    capped = _builder(tmp_path, "iterative").set_budget(max_reasoning_calls=4).plan(START)
    assert capped.phases[2].reasoning_calls == 4
    steps = _builder(tmp_path, "instructions,iterative").plan(START)
    assert steps.phases[2].reasoning_calls == 3  # one step of two needs it
    assert steps.strategy == "sequence (instructions -> iterative)"


def test_a_judge_judges_every_task_answer(tmp_path: Path) -> None:
    plan = _builder(tmp_path, "instructions").set_judge("fake/judge").plan(START)
    assert all(p.judge_calls == p.calls for p in plan.phases)
    assert plan.power["scores"] == "continuous" and plan.power["sd"] == 0.25


def test_the_embedded_model_answers_one_call_at_a_time(tmp_path: Path) -> None:
    FakeModel(responder, fault=_no_call).install()
    local = (
        PromptOptimizer()
        .set_dataset(make_rows(100))
        .add_provider("local", "default")
        .add_metric("exact_match")
        .set_strategy("instructions")
        .set_run_dir(tmp_path)
    )
    plan = local.plan(START)
    assert plan.max_workers == 1
    assert plan.phases[0].seconds == 10  # 10 preflight rows, one at a time, 1 s each


def test_a_budget_below_the_fixed_calls_is_named(tmp_path: Path) -> None:
    plan = _builder(tmp_path, "instructions").set_budget(max_calls=50).plan(START)
    assert plan.candidates == 0 and plan.phases[2].calls == 0
    assert any("below the 70 calls every run pays" in note for note in plan.notes)
