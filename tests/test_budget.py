"""Budgets checked before work starts (reflex/run/budget.py): room kept for the final test
evaluation in calls, dollars and seconds, each refusal naming what was spent and what to raise.
(Budgets on whole runs: tests/test_budget_roles.py, tests/reliability/test_budget_messages.py.)"""

from __future__ import annotations

import pytest

from reflex.config import BudgetConfig
from reflex.errors import BudgetExhausted
from reflex.models.usage import Ledger
from reflex.run.budget import Budget, figure, requests_and_cost


def _budget(**limits: float) -> Budget:
    return Budget(BudgetConfig.model_validate(limits), Ledger())


def test_figures_are_never_rounded_to_a_false_zero() -> None:
    assert [figure(0.0123), figure(0.00004, 4), figure(1234.5), figure(0)] == [
        "0.0123",
        "0.0000400",
        "1234",
        "0",
    ]


def test_the_search_leaves_the_final_its_calls() -> None:
    budget = _budget(max_calls=100)
    budget.reserve_final(rows=20, requests=30, cost=0.0, judged=0, seconds=1.0, paid=20)
    assert budget.reserved_calls == 30  # a pipeline's requests, not just its rows
    budget.metric_calls = 60
    budget.check_evaluation(10)
    with pytest.raises(BudgetExhausted, match="11 more calls needed, 10 left of 100"):
        budget.check_evaluation(11)
    budget.metric_calls = 70
    budget.check_evaluation(30, use_reserve=True)  # the final takes its reserve


def test_every_role_s_calls_count_under_the_total() -> None:
    budget = _budget(max_total_calls=5, max_reasoning_calls=2)
    for _ in range(2):
        budget.ledger.add_call("reasoning", 1, 1, None)
    with pytest.raises(BudgetExhausted, match="reasoning-call budget: all 2 calls used"):
        budget.check_reasoning()
    budget.ledger.add_call("judge", 1, 1, None)
    budget.check_total(2)
    with pytest.raises(BudgetExhausted, match="total-call budget: 3 calls made of 5"):
        budget.check_total(3)


def test_dollars_reserved_for_the_final_are_spent_for_the_search() -> None:
    budget = _budget(max_cost=1.0)
    budget.ledger.add_call("task", 10, 10, 0.6)
    budget.ledger.add_cache_hit("task", cost=0.1)
    requests, cost, judged = requests_and_cost(budget.ledger)
    assert (requests, round(cost, 6), judged) == (2, 0.7, 0)
    budget.reserve_final(rows=2, requests=requests, cost=0.4, judged=judged, seconds=1, paid=1)
    with pytest.raises(
        BudgetExhausted, match=r"cost budget: \$1\.0000 spent or reserved of \$1\.0000"
    ):
        budget.check_evaluation(1)
    budget.check_evaluation(1, use_reserve=True)


def test_the_final_s_time_is_kept_from_the_baseline_s_measurement() -> None:
    budget = _budget(max_seconds=100.0)
    # A baseline of 3 s that paid 1 of 4 rows: 12 s for every row, twice that kept.
    assert budget.reserve_final(rows=4, requests=4, cost=0, judged=0, seconds=3, paid=1) == 24
    assert _budget(max_seconds=100.0).reserve_final(
        rows=4, requests=4, cost=0, judged=0, seconds=0.1, paid=4
    ) == pytest.approx(5.0)  # at least 5% of --max-seconds
    assert _budget().reserve_final(rows=4, requests=4, cost=0, judged=0, seconds=3, paid=4) is None


def test_a_spent_clock_says_what_the_run_needs() -> None:
    budget = _budget(max_seconds=10.0)
    budget.elapsed_before = 50.0  # as a resumed run's earlier segments had spent
    with pytest.raises(BudgetExhausted, match="before the baseline was measured") as info:
        budget.check_evaluation(1)
    assert "raise --max-seconds" in str(info.value)
    budget.baseline_seconds = 8.0
    with pytest.raises(BudgetExhausted, match=r"the baseline alone took 8\.00 s on this machine"):
        budget.check_evaluation(1)
