"""strategies/_gepa_plan.py: how many proposals a metric-call budget buys, logged before the run."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_gepa import START, builder

from reflex.data.pipeline import Prompt
from reflex.testing import FakeModel
from reflex_strategies.gepa import BudgetPlan


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
