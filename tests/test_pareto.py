"""strategies/_pareto.py: per-instance Pareto fronts, dominance and parent sampling (gepa's)."""

from __future__ import annotations

import random

from reflex_strategies._pareto import dominates, instance_winners, pareto_front, sample_parent


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
