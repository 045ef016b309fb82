"""When a search stops: the iteration limit follows the budget."""

from __future__ import annotations

from reflex.run.stopping import iteration_limit


def test_iteration_limit_follows_the_search_budget() -> None:
    assert iteration_limit(3, 650, fixed_calls=250, val_pass=40) == 3  # set: kept
    assert iteration_limit(None, None, fixed_calls=250, val_pass=40) == 5
    assert iteration_limit(None, 650, fixed_calls=250, val_pass=40) == 10
    assert iteration_limit(None, 260, fixed_calls=250, val_pass=40) == 5  # never below 5


def test_a_raced_search_plans_a_candidate_at_half_a_val_pass() -> None:
    assert iteration_limit(None, 650, fixed_calls=250, val_pass=40, raced=True) == 20
    assert iteration_limit(3, 650, fixed_calls=250, val_pass=40, raced=True) == 3  # set: kept
