"""Ranking maths for ``pdo``: win matrices, four rankings, adaptive fusion, double Thompson.

``wins[i][j]`` is how many rows prompt ``i`` won against prompt ``j`` (a tie adds 0.5 to
both), so ``wins[i][j] + wins[j][i]`` is the number of rows they were compared on. Every
ranking returns one score per prompt in [0, 1], higher is better; ``alive`` restricts a ranking
to the prompts still in the pool (others get 0). All functions are pure; randomness comes only
from the ``random.Random`` passed in.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

__all__ = [
    "METHODS",
    "Matrix",
    "borda",
    "copeland",
    "double_thompson",
    "elo",
    "fuse",
    "rankings",
    "update_weights",
    "win_rate",
]

Matrix = list[list[float]]
METHODS = ("copeland", "borda", "elo", "win_rate")


def _pref(wins: Matrix, i: int, j: int) -> float | None:
    """Share of rows ``i`` won against ``j``, or None when they never met."""
    total = wins[i][j] + wins[j][i]
    return wins[i][j] / total if total else None


def _others(alive: Sequence[int], i: int) -> list[int]:
    return [j for j in alive if j != i]


def copeland(wins: Matrix, alive: Sequence[int]) -> list[float]:
    """Share of other prompts ``i`` beats head to head (a tie counts half; unmet pairs 0)."""
    out = [0.0] * len(wins)
    for i in alive:
        others = _others(alive, i)
        if not others:
            out[i] = 1.0
            continue
        points = 0.0
        for j in others:
            pref = _pref(wins, i, j)
            points += 0.0 if pref is None else 1.0 if pref > 0.5 else 0.5 if pref == 0.5 else 0.0
        out[i] = points / len(others)
    return out


def borda(wins: Matrix, alive: Sequence[int]) -> list[float]:
    """Mean over other prompts of the share of rows ``i`` won (an unmet pair counts 0.5)."""
    out = [0.0] * len(wins)
    for i in alive:
        prefs = [_pref(wins, i, j) for j in _others(alive, i)]
        out[i] = sum(0.5 if p is None else p for p in prefs) / len(prefs) if prefs else 1.0
    return out


def win_rate(wins: Matrix, alive: Sequence[int]) -> list[float]:
    """Rows won over rows compared, pooled over every opponent (0.5 before any duel)."""
    out = [0.0] * len(wins)
    for i in alive:
        won = sum(wins[i][j] for j in _others(alive, i))
        played = won + sum(wins[j][i] for j in _others(alive, i))
        out[i] = won / played if played else 0.5
    return out


def elo(
    duels: Sequence[Sequence[float]], size: int, alive: Sequence[int], k: float = 32.0
) -> list[float]:
    """Elo ratings replayed over ``duels`` (``(i, j, share of rows i won)``), scaled to [0, 1]."""
    ratings = [1000.0] * size
    for i, j, share in duels:
        a, b = int(i), int(j)
        expected = 1.0 / (1.0 + 10 ** ((ratings[b] - ratings[a]) / 400.0))
        ratings[a] += k * (share - expected)
        ratings[b] -= k * (share - expected)
    return _scaled(ratings, alive)


def _scaled(values: Sequence[float], alive: Sequence[int]) -> list[float]:
    """Min-max scale ``values`` over ``alive`` to [0, 1] (all equal: 0.5); others 0."""
    out = [0.0] * len(values)
    low = min((values[i] for i in alive), default=0.0)
    high = max((values[i] for i in alive), default=0.0)
    for i in alive:
        out[i] = 0.5 if high == low else (values[i] - low) / (high - low)
    return out


def rankings(
    wins: Matrix, duels: Sequence[Sequence[float]], alive: Sequence[int]
) -> dict[str, list[float]]:
    """Every method's scores, each min-max scaled over ``alive`` so they can be fused."""
    raw = {
        "copeland": copeland(wins, alive),
        "borda": borda(wins, alive),
        "elo": elo(duels, len(wins), alive),
        "win_rate": win_rate(wins, alive),
    }
    return {name: _scaled(scores, alive) for name, scores in raw.items()}


def fuse(ranks: dict[str, list[float]], weights: dict[str, float]) -> list[float]:
    """Weighted mean of the methods' scores (weights need not sum to 1)."""
    total = sum(weights.values()) or 1.0
    size = len(next(iter(ranks.values())))
    return [sum(weights[m] * ranks[m][i] for m in ranks) / total for i in range(size)]


def update_weights(
    weights: dict[str, float],
    ranks: dict[str, list[float]],
    i: int,
    j: int,
    share: float,
    eta: float = 0.5,
) -> dict[str, float]:
    """Multiplicative-weights step: methods that predicted the duel's winner gain weight.

    A method predicts ``i`` when it scores ``i`` above ``j`` (``j`` when below; no prediction on
    a tie, or when the duel itself was a tie). Weights are renormalised to sum to 1.
    """
    if share == 0.5:
        return dict(weights)
    winner_is_i = share > 0.5
    new: dict[str, float] = {}
    for method, weight in weights.items():
        a, b = ranks[method][i], ranks[method][j]
        right = 0.0 if a == b else 1.0 if (a > b) == winner_is_i else -1.0
        new[method] = weight * math.exp(eta * right)
    total = sum(new.values())
    return {m: w / total for m, w in new.items()}


def _sampled_copeland(wins: Matrix, alive: Sequence[int], rng: random.Random) -> dict[int, float]:
    """Copeland scores on one Beta posterior draw of every pairwise preference."""
    theta: dict[tuple[int, int], float] = {}
    for a in alive:
        for b in alive:
            if a < b:
                theta[(a, b)] = rng.betavariate(wins[a][b] + 1.0, wins[b][a] + 1.0)
                theta[(b, a)] = 1.0 - theta[(a, b)]
    return {a: sum(theta[(a, b)] > 0.5 for b in _others(alive, a)) for a in alive}


def _upper(wins: Matrix, i: int, j: int, t: float, alpha: float) -> float:
    total = wins[i][j] + wins[j][i]
    if not total:
        return 1.0
    return min(1.0, wins[i][j] / total + math.sqrt(alpha * math.log(t) / total))


def double_thompson(
    wins: Matrix, alive: Sequence[int], rng: random.Random, alpha: float = 0.51
) -> tuple[int, int]:
    """Pick a pair to duel by double Thompson sampling (Wu & Liu, 2016).

    First: among prompts whose upper-confidence Copeland score is maximal, the one with the best
    Copeland score on a posterior draw. Second: the opponent most likely to beat the first on a
    fresh draw of ``P(j beats first)``, among those that plausibly can (upper bound >= 0.5).
    Needs at least two ``alive`` prompts; ties break by pool order.
    """
    if len(alive) < 2:
        raise ValueError("double Thompson sampling needs at least two prompts")
    t = 1.0 + sum(sum(row) for row in wins)
    upper = {a: sum(_upper(wins, a, b, t, alpha) > 0.5 for b in _others(alive, a)) for a in alive}
    best_upper = max(upper.values())
    candidates = [a for a in alive if upper[a] == best_upper]
    sampled = _sampled_copeland(wins, alive, rng)
    first = max(candidates, key=lambda a: (sampled[a], -a))
    rivals = [b for b in _others(alive, first) if _upper(wins, b, first, t, alpha) >= 0.5]
    rivals = rivals or _others(alive, first)
    draws = {b: rng.betavariate(wins[b][first] + 1.0, wins[first][b] + 1.0) for b in rivals}
    second = max(rivals, key=lambda b: (draws[b], -b))
    return first, second
