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


def test_a_candidate_of_several_iterations_scales_the_limit() -> None:
    # mipro: a round of 5 trials and 1 full evaluation is one candidate of 60 calls.
    assert iteration_limit(None, None, fixed_calls=250, val_pass=60, per_candidate=6) == 30
    assert iteration_limit(None, 850, fixed_calls=250, val_pass=60, per_candidate=6) == 60
    assert iteration_limit(7, 850, fixed_calls=250, val_pass=60, per_candidate=6) == 7
