"""The reasoning-free strategies (instructions, fewshot, auto) on a prompt-sensitive fake model."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reflex import ConfigurationError, OptimizationResult, PromptOptimizer
from reflex.api import CHAT_DEMOS_HEADER
from reflex.testing import FakeModel, FakeRequest
from reflex_strategies.auto import plan_iterations

START = "Classify the topic of the text."
LABELS = ["politics", "sports", "tech"]
PHRASES = {
    "sports": "the striker scored twice",
    "politics": "the senate passed the bill",
    "tech": "the new chip is faster",
}
BETTER = f"{START} Answer with one of: politics, sports, tech."


def make_rows(n: int = 60) -> list[dict[str, str]]:
    rows = []
    for i in range(n):
        label = LABELS[i % 3]
        rows.append({"id": f"t{i:03d}", "input": f"text {i}: {PHRASES[label]}", "ideal": label})
    return rows


ROWS = make_rows()
IDEAL = {row["input"]: row["ideal"] for row in ROWS}


def _index(request: FakeRequest) -> int:
    return int(request.user.split()[1].rstrip(":"))


def _lists_labels(system: str) -> bool:
    return all(label in system for label in LABELS)


def _has_demos(prompt: str) -> bool:
    """The prompt text carries demos (as chat turns, the default, or in the system prompt)."""
    return (
        "Examples:\n" in prompt or f"{CHAT_DEMOS_HEADER}\n" in prompt
    ) and "\nOutput: " in prompt


def _sent_demos(request: FakeRequest) -> bool:
    """The model was shown demos: user/assistant turns before the input, or in the system text."""
    turns = [m.get("role") for m in request.messages]
    return "assistant" in turns or _has_demos(request.system)


def task(correct: Callable[[FakeRequest], bool]) -> Callable[[FakeRequest], str]:
    """A task model that answers right when ``correct(request)``, else with a sentence."""

    def answer(request: FakeRequest) -> str:
        if request.model.startswith("fake/reasoner"):
            return f"<diagnosis>vague</diagnosis><edit>list labels</edit><prompt>{BETTER}</prompt>"
        ideal = IDEAL[request.user]
        if correct(request) or _index(request) % 4 == 0:  # baseline: a quarter right
            return ideal
        return f"This text is about {ideal}."

    return answer


def needs_labels(request: FakeRequest) -> bool:
    return _lists_labels(request.system)


def needs_both(request: FakeRequest) -> bool:
    labels, demos = _lists_labels(request.system), _sent_demos(request)
    return (labels and demos) or (labels and _index(request) % 2 == 0)


def builder(run_dir: Path, strategy: str, **options: Any) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(ROWS)
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy(strategy, **options)
        .set_run_dir(run_dir)
        .set_accept("any")  # the phases on 6 val rows are under test; the gate: test_acceptance.py
        .set_race(False)  # every candidate on every val row; racing: test_race.py
    )


def baseline_val(result: OptimizationResult) -> float:
    events = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    return next(
        e["mean_score"]
        for e in map(json.loads, events)
        if e["type"] == "evaluation" and e.get("label") == "val:baseline"
    )


def assert_improves(result: OptimizationResult) -> None:
    assert result.baseline is not None and result.final is not None
    assert result.best_score_val is not None and result.best_score_val > baseline_val(result)
    assert result.final.mean_score > result.baseline.mean_score
    assert result.final.system_prompt == result.best_prompt != START


def test_auto_without_reasoning_model_runs_both_phases(tmp_path: Path) -> None:
    fake = FakeModel(task(needs_both)).install()
    result = builder(tmp_path, "auto").run(START)
    assert_improves(result)
    assert [p["phase"] for p in result.phase_history] == ["instructions", "fewshot"]
    assert not fake.calls_to("fake/reasoner")
    assert _lists_labels(result.best_prompt) and _has_demos(result.best_prompt)
    assert result.final is not None and result.final.mean_score == 1.0


def test_auto_with_reasoning_model_adds_iterative_phase(tmp_path: Path) -> None:
    def mostly_both(request: FakeRequest) -> bool:  # never perfect, so iterative has work
        return needs_both(request) and _index(request) % 5 != 1

    fake = FakeModel(task(mostly_both)).install()
    result = (
        builder(tmp_path, "auto")
        .set_reasoning_model("fake/reasoner")
        .configure(max_iterations=6)
        .run(START)
    )
    phases = [p["phase"] for p in result.phase_history]
    assert phases == ["instructions", "fewshot", "iterative"]
    assert fake.calls_to("fake/reasoner")
    # iterative refines the best prompt so far, not the initial one
    first = fake.calls_to("fake/reasoner")[0].messages[-1]["content"]
    assert CHAT_DEMOS_HEADER in first


def test_auto_can_skip_iterative_even_with_reasoning_model(tmp_path: Path) -> None:
    fake = FakeModel(task(needs_both)).install()
    result = (
        builder(tmp_path, "auto", use_reasoning_model=False)
        .set_reasoning_model("fake/reasoner")
        .run(START)
    )
    assert "iterative" not in [p["phase"] for p in result.phase_history]
    assert not fake.calls_to("fake/reasoner")


@pytest.mark.parametrize(
    ("strategy", "options"),
    [
        ("fewshot", {"bogus": 1}),
        ("instructions", {"max_label": 3}),
        ("auto", {"bogus": True}),
        ("auto", {"fewshot": {"max_demo": 2}}),
        ("fewshot", {"max_demos": 0}),
    ],
)
def test_options_reject_unknown_or_bad_keys(
    tmp_path: Path, strategy: str, options: dict[str, Any]
) -> None:
    fake = FakeModel(task(needs_labels)).install()
    with pytest.raises(ConfigurationError, match=strategy):
        builder(tmp_path, strategy, **options).run(START)
    assert fake.requests == []


@pytest.mark.parametrize("strategy", ["fewshot", "instructions", "auto"])
def test_runs_are_deterministic(tmp_path: Path, strategy: str) -> None:
    FakeModel(task(needs_both)).install()
    one = builder(tmp_path / "a", strategy).run(START)
    two = builder(tmp_path / "b", strategy).run(START)
    assert one.best_prompt == two.best_prompt
    assert [r.system_prompt for r in one.iterations] == [r.system_prompt for r in two.iterations]
    assert one.usage["task"]["calls"] == two.usage["task"]["calls"] > 0


def test_max_iterations_and_budget_are_respected(tmp_path: Path) -> None:
    FakeModel(task(lambda r: False)).install()
    result = (
        builder(tmp_path, "fewshot")
        .configure(max_iterations=2, early_stopping_patience=None)
        .run(START)
    )
    assert len(result.iterations) == 2
    # preflight 10 + baseline 12 + val 12 + final reserve 12 = 46; of the 34 left a bootstrap
    # of 16 rows would cost over a quarter, so the pool is built from references: 2 candidates.
    limited = builder(tmp_path / "b", "fewshot", demo_source="bootstrap")
    limited = limited.set_budget(max_calls=80).run(START)
    assert limited.stop_reason.startswith("budget exhausted")
    assert len(limited.iterations) == 2 and limited.usage["metric_calls"] <= 80
    # With 64 calls left the bootstrap (16) is paid first.
    roomy = builder(tmp_path / "c", "fewshot", demo_source="bootstrap")
    roomy = roomy.set_budget(max_calls=110).run(START)
    events = Path(str(roomy.run_dir), "events.jsonl").read_text().splitlines()
    [pool] = [e for e in map(json.loads, events) if e["type"] == "fewshot_pool"]
    assert pool["source"] == "bootstrap" and roomy.usage["metric_calls"] <= 110


def test_budget_stopped_auto_completes_its_last_phase_entry(tmp_path: Path) -> None:
    # Issue 17: the phase in flight when the budget ran out had no end_score/iterations/stop.
    FakeModel(task(needs_both)).install()
    result = builder(tmp_path, "auto").set_budget(max_calls=100).run(START)
    assert result.stop_reason.startswith("budget exhausted")
    last = result.phase_history[-1]
    assert last["stop"] == result.stop_reason
    assert last["end_score"] == result.best_score_val
    assert last["iterations"] == last["end_iteration"] - last["start_iteration"] + 1
    assert {"end_score", "iterations", "stop"} <= set(result.phase_history[0])


@pytest.mark.parametrize("max_calls", [74, 82])
def test_a_small_call_budget_pays_for_both_axes(tmp_path: Path, max_calls: int) -> None:
    # Issue 17: at --max-calls 150 `auto` spent every val pass on `instructions` (the plan
    # counted the five iterations the engine never goes below), the fewshot bootstrap ate the
    # rest, and no phase started with less left than a screened candidate costs (batch + val)
    # although one val pass was affordable. Fixed calls are 46; val passes cost 12.
    FakeModel(task(needs_both)).install()
    result = builder(tmp_path, "auto").set_budget(max_calls=max_calls).run(START)
    phases = {p["phase"]: p for p in result.phase_history}
    assert phases["instructions"]["iterations"] == 1
    assert phases["fewshot"]["iterations"] >= 1
    assert _lists_labels(result.best_prompt) and _has_demos(result.best_prompt)
    assert result.best_score_val == 1.0 and result.usage["metric_calls"] <= max_calls
    events = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    [pool] = [e for e in map(json.loads, events) if e["type"] == "fewshot_pool"]
    assert pool["source"] == "labels" and pool["bootstrapped"] == 0  # no calls spent on it


def test_an_unset_max_iterations_uses_the_budget(tmp_path: Path, recording_callback: Any) -> None:
    # Issue 17: at --max-calls 650 a run stopped after 5 candidates with calls to spare.
    FakeModel(task(lambda r: False)).install()
    result = (
        builder(tmp_path, "auto")
        .configure(early_stopping_patience=None)
        .set_budget(max_calls=300)
        .run(START, callbacks=[recording_callback])
    )
    # 300 calls - (10 preflight + 2 x 12 test + 12 val baseline) = 254: 21 val passes of 12.
    [(config, _)] = [args for name, args in recording_callback.calls if name == "on_run_start"]
    assert config.max_iterations == 21
    assert len(result.iterations) > 5 and result.usage["metric_calls"] <= 300
    saved = json.loads(Path(str(result.run_dir), "config.json").read_text())
    assert saved["max_iterations"] is None  # as the user set it: a resume compares like for like


def test_plan_leaves_room_for_each_phase() -> None:
    assert plan_iterations(5, reasoning=False) == {"instructions": 2, "iterative": 0}
    assert plan_iterations(5, reasoning=True) == {"instructions": 1, "iterative": 1}
    assert plan_iterations(1, reasoning=True) == {"instructions": 0, "iterative": 1}
