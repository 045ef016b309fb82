"""Per-instance Pareto fronts over a candidates x examples score matrix (used by ``gepa``).

``scores[candidate][example]`` is a score in [0, 1], higher is better. A candidate is on the
front when it is (within ``epsilon``) the best on at least one example and no other candidate
dominates it (at least as good on every example, strictly better on one). Identical score rows
keep the earliest candidate only. Candidates are sampled with weight = number of examples they
win, so a specialist that alone solves one hard row keeps being explored.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

__all__ = ["dominates", "instance_winners", "pareto_front", "sample_parent"]

Matrix = Mapping[str, Mapping[str, float]]


def _examples(scores: Matrix) -> list[str]:
    keys: set[str] = set()
    for row in scores.values():
        keys.update(row)
    return sorted(keys)


def dominates(a: Mapping[str, float], b: Mapping[str, float], examples: Sequence[str]) -> bool:
    """True when ``a`` is >= ``b`` on every example and > on at least one (missing = 0)."""
    better = False
    for key in examples:
        x, y = a.get(key, 0.0), b.get(key, 0.0)
        if x < y:
            return False
        better = better or x > y
    return better


def instance_winners(scores: Matrix, epsilon: float = 0.0) -> dict[str, list[str]]:
    """For each example, the candidates within ``epsilon`` of the best score on it (in order)."""
    winners: dict[str, list[str]] = {}
    for key in _examples(scores):
        best = max(row.get(key, 0.0) for row in scores.values())
        winners[key] = [c for c, row in scores.items() if row.get(key, 0.0) >= best - epsilon]
    return winners


def pareto_front(scores: Matrix, epsilon: float = 0.0) -> list[str]:
    """Candidates on the per-instance front, dominated ones pruned, in matrix order."""
    examples = _examples(scores)
    winners = instance_winners(scores, epsilon)
    on_front = {c for names in winners.values() for c in names}
    if not examples:
        on_front = set(scores)
    front: list[str] = []
    seen_rows: list[dict[str, float]] = []
    for cand, row in scores.items():
        if cand not in on_front:
            continue
        if any(dominates(scores[o], row, examples) for o in on_front if o != cand):
            continue
        values = {k: row.get(k, 0.0) for k in examples}
        if values in seen_rows:
            continue  # same scores as an earlier candidate: keep the earlier one
        seen_rows.append(values)
        front.append(cand)
    return front


def sample_parent(
    scores: Matrix,
    rng: random.Random,
    *,
    epsilon: float = 0.0,
    top_k: int | None = None,
) -> str:
    """A front candidate, drawn with weight = examples it wins; ``top_k`` keeps the best-mean k."""
    front = pareto_front(scores, epsilon)
    if top_k is not None and len(front) > top_k:
        by_mean = sorted(front, key=lambda c: -_mean(scores[c]))[:top_k]
        front = [c for c in front if c in by_mean]
    winners = instance_winners({c: scores[c] for c in front}, epsilon)
    weights = [sum(c in names for names in winners.values()) for c in front]
    if not any(weights):
        weights = [1] * len(front)
    return rng.choices(front, weights=weights, k=1)[0]


def _mean(row: Mapping[str, float]) -> float:
    return sum(row.values()) / len(row) if row else 0.0
