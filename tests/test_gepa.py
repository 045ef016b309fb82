"""gepa: Pareto front and dominance, merges, the budget plan, lineage (the rewrite, the minibatch
gate and its memory: test_gepa_reflect.py)."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import BETTER, make_rows

from reflex import PromptOptimizer
from reflex.data.pipeline import Prompt
from reflex.data.prompts import PromptSpec
from reflex.testing import FakeModel, FakeRequest
from reflex_strategies._merge import Candidate, find_merge
from reflex_strategies._pareto import dominates, instance_winners, pareto_front, sample_parent
from reflex_strategies.gepa import BudgetPlan

START = "Classify the sentiment."


def builder(run_dir: Path, rows: int = 40, **options: Any) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows(rows))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("gepa", **options)
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(run_dir)
        .configure(max_iterations=6, early_stopping_patience=None, max_workers=4)
        .set_accept("any")  # gepa's own selection on 8 val rows; the gate: test_acceptance.py
    )


# --- Pareto front ------------------------------------------------------------------------------


def test_front_keeps_specialists_and_drops_dominated_and_duplicates() -> None:
    scores = {
        "a": {"x": 1.0, "y": 0.0},
        "b": {"x": 0.0, "y": 1.0},
        "c": {"x": 0.5, "y": 0.5},  # best nowhere
        "d": {"x": 1.0, "y": 0.0},  # same row as a
    }
    assert pareto_front(scores) == ["a", "b"]
    assert instance_winners(scores) == {"x": ["a", "d"], "y": ["b"]}


def test_dominance() -> None:
    keys = ["x", "y"]
    assert dominates({"x": 1, "y": 1}, {"x": 1, "y": 0}, keys)
    assert not dominates({"x": 1, "y": 0}, {"x": 1, "y": 0}, keys)
    assert not dominates({"x": 1, "y": 0}, {"x": 0, "y": 1}, keys)
    assert dominates({"x": 0.2}, {}, keys)  # a missing score counts as 0
    assert pareto_front({"a": {"x": 1, "y": 1}, "b": {"x": 1, "y": 0}}) == ["a"]


def test_epsilon_widens_the_front() -> None:
    scores = {
        "a": {"x": 1.0, "y": 0.2},
        "b": {"x": 0.95, "y": 0.3},
        "c": {"x": 0.0, "y": 0.35},
    }
    assert pareto_front(scores) == ["a", "c"]
    assert pareto_front(scores, epsilon=0.1) == ["a", "b", "c"]


def test_sampling_weights_by_rows_won_and_top_k() -> None:
    scores = {
        "a": {"1": 1.0, "2": 1.0, "3": 1.0, "4": 0.0},
        "b": {"1": 0.0, "2": 0.0, "3": 0.0, "4": 1.0},
    }
    rng = random.Random(0)
    draws = [sample_parent(scores, rng) for _ in range(400)]
    assert 0.65 < draws.count("a") / 400 < 0.85  # a wins 3 rows of 4
    assert {sample_parent(scores, rng, top_k=1) for _ in range(20)} == {"a"}


# --- merge -------------------------------------------------------------------------------------


def test_merge_combines_lineages_that_changed_different_components() -> None:
    seed = Candidate(0, {"role": "r0", "format": "f0"}, (), (), "seed", 0)
    a = Candidate(1, {"role": "r1", "format": "f0"}, (0,), ("role",), "reflection", 1)
    b = Candidate(2, {"role": "r0", "format": "f2"}, (0,), ("format",), "reflection", 2)
    clash = Candidate(3, {"role": "r3", "format": "f0"}, (0,), ("role",), "reflection", 3)
    scores = {"0": {"x": 0.1}, "1": {"x": 0.6}, "2": {"x": 0.5}, "3": {"x": 0.9}}
    found = find_merge([seed, a, b, clash], scores, set())
    assert found is not None
    first, second, merged, changed = found
    assert (first.id, second.id) == (2, 3)  # best summed score first; 1 and 3 both changed role
    assert merged == {"role": "r3", "format": "f2"} and changed == ["format", "role"]
    assert find_merge([seed, a, b, clash], scores, {(2, 3), (1, 2)}) is None
    assert find_merge([seed, a], scores, set()) is None  # a descends from seed


# --- budget plan -------------------------------------------------------------------------------


def test_budget_plan_numbers() -> None:
    plan = BudgetPlan(available=100, pool=10, minibatch=3, seed_cost=0, max_iterations=50)
    assert (plan.per_rejected, plan.per_accepted) == (6, 16)
    assert plan.proposals(accepted=True) == 6 and plan.proposals(accepted=False) == 16
    capped = BudgetPlan(available=100, pool=10, minibatch=3, seed_cost=10, max_iterations=4)
    assert capped.proposals(accepted=True) == 4
    assert "6 to 16 proposals" in plan.message()
    unlimited = BudgetPlan(None, 10, 3, 0, 7)
    assert (
        unlimited.proposals(accepted=True) == 7 and "no metric-call budget" in unlimited.message()
    )


def test_budget_plan_is_logged_and_warns(
    fake_model: FakeModel, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="reflex_strategies.gepa"):
        result = builder(tmp_path).set_budget(max_calls=60).run(START)
    warning = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warning and "fewer than 5 proposals" in warning[0].getMessage()
    events = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    plans = [json.loads(e) for e in events if '"budget_plan"' in e]
    assert plans and plans[0]["per_accepted"] == 6 + 8  # 2 x minibatch 3, val 8 rows


def test_budget_plan_in_model_calls_for_a_three_call_pipeline() -> None:
    one = BudgetPlan(available=288, pool=10, minibatch=3, seed_cost=0, max_iterations=500)
    three = BudgetPlan(288, 10, 3, 0, 500, calls_per_row=3.0)
    assert (three.per_rejected, three.per_accepted) == (18, 48) == (6 * 3, 16 * 3)
    assert one.proposals(accepted=True) == 18 and three.proposals(accepted=True) == 6
    assert one.proposals(accepted=False) == 48 and three.proposals(accepted=False) == 16
    assert "6 to 16 proposals" in three.message() and "(3 model calls per row)" in three.message()
    assert "18 to 48 proposals" in one.message() and "per row" not in one.message()
    seeded = BudgetPlan(288, 10, 3, 16, 500, calls_per_row=3.0)  # the seed costs 48 calls
    assert seeded.proposals(accepted=True) == (288 - 48) // 48


def three_calls(prompt: Prompt, input: str, call: Callable[..., str]) -> str:
    """Two helper calls, then the answer: three task-model calls per row."""
    messages = [{"role": "system", "content": prompt}, {"role": "user", "content": input}]
    for model in ("fake/draft", "fake/check"):
        call(messages, model=model, step=model)
    return call(messages, step="answer")


def _plan(result: Any) -> dict[str, Any]:
    events = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    [plan] = [json.loads(e) for e in events if '"budget_plan"' in e]
    return plan


def test_budget_plan_of_a_pipeline_counts_its_calls_per_row(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    plain = _plan(builder(tmp_path / "plain").set_budget(max_calls=2000).run(START))
    piped = builder(tmp_path / "piped").set_pipeline(three_calls).set_budget(max_calls=2000)
    plan = _plan(piped.run(START))
    assert (plain["calls_per_row"], plan["calls_per_row"]) == (1.0, 3.0)
    assert plan["per_rejected"] == 3 * plain["per_rejected"] == 3 * 6
    assert plan["per_accepted"] == 3 * plain["per_accepted"] == 3 * (6 + 8)


# --- the search on the fake model ----------------------------------------------------------------


def test_gepa_improves_and_reports_lineage(fake_model: FakeModel, tmp_path: Path) -> None:
    result = builder(tmp_path).run(START)
    assert result.best_prompt == BETTER and result.final is not None
    assert result.final.mean_score == 1.0
    assert result.best_components == {"system": BETTER}
    seed, child = result.lineage[:2]
    assert seed["kind"] == "seed" and child["parents"] == [0] and child["changed"] == ["system"]
    assert child["val_score"] == 1.0 and child["minibatch"][1] > child["minibatch"][0]
    # Once the parent is perfect on its minibatch, no more reasoning calls are made.
    skipped = [r for r in result.iterations if r.rejected and "perfect" in r.rejected]
    assert skipped and all(r.val_score is None for r in skipped)
    assert len(fake_model.calls_to("fake/reasoner")) == 1


ROLE, FORMAT = "RULE-A", "RULE-B"


def _two_part_task(request: FakeRequest) -> str:
    """RULE-A fixes even rows, RULE-B odd rows; without either only rows 1, 5, 9, ... are right."""
    index = int(request.user.split()[1].rstrip(":"))
    ideal = "positive" if index % 2 == 0 else "negative"
    a, b = ROLE in request.system, FORMAT in request.system
    ok = (a and index % 2 == 0) or (b and index % 2 == 1)
    ok = ok or (not a and not b and index % 4 == 1)
    return ideal if ok else "unsure"


def _two_part(request: FakeRequest) -> str:
    if request.model != "fake/reasoner":
        return _two_part_task(request)
    brief = request.messages[1]["content"]  # the brief, also when this is a retry
    n = brief.count("- scored ")
    if "Rewrite the component 'role'" in brief:
        return f"<prompt>You classify reviews. {ROLE} ({n})</prompt>"
    if ROLE in brief.split("<current>")[0]:
        return f"<prompt>Be careful, again ({n}).</prompt>"  # no help on this lineage
    return f"<prompt>Be careful. {FORMAT} ({n})</prompt>"


def test_merge_on_a_two_component_prompt(tmp_path: Path) -> None:
    FakeModel(_two_part).install()
    spec = PromptSpec({"role": "You classify reviews.", "format": "Be careful."})
    result = builder(tmp_path, minibatch_size=6).configure(max_iterations=10).run(spec)
    merges = [c for c in result.lineage if c["kind"] == "merge"]
    assert merges and sorted(merges[0]["changed"]) == ["format", "role"]
    assert result.best_components is not None
    assert ROLE in result.best_components["role"] and FORMAT in result.best_components["format"]
    assert result.best_prompt == spec.render(result.best_components)
    assert result.final is not None and result.final.mean_score == 1.0
    assert all(r.components is not None for r in result.iterations if not r.failed)
