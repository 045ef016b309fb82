"""Ranking from duels: Copeland, Borda, win rate, Elo, their fusion and double Thompson sampling."""

from __future__ import annotations

import random

import pytest

from reflex_strategies import _ranking as rk

# wins[i][j]: rows i won against j. 0 beats 1 (7-3) and 2 (3-2); 1 beats 2 (8-2).
WINS = [[0.0, 7.0, 3.0], [3.0, 0.0, 8.0], [2.0, 2.0, 0.0]]
ALL = [0, 1, 2]


def test_copeland_borda_win_rate_on_known_matrix() -> None:
    assert rk.copeland(WINS, ALL) == [1.0, 0.5, 0.0]
    assert rk.borda(WINS, ALL) == pytest.approx([(0.7 + 0.6) / 2, (0.3 + 0.8) / 2, (0.4 + 0.2) / 2])
    assert rk.win_rate(WINS, ALL) == pytest.approx([10 / 15, 11 / 20, 4 / 15])
    # Restricted to the pool that is still alive: 2 has been pruned.
    assert rk.copeland(WINS, [0, 1]) == [1.0, 0.0, 0.0]


def test_elo_replays_duels_and_scales() -> None:
    scores = rk.elo([(0, 1, 1.0), (1, 2, 1.0), (0, 2, 0.75)], 3, ALL)
    assert scores[0] == 1.0 and scores[2] == 0.0 and 0.0 < scores[1] < 1.0
    assert rk.elo([], 3, ALL) == [0.5, 0.5, 0.5]  # no duels: everyone equal


def test_fusion_and_adaptive_weights() -> None:
    ranks = {"copeland": [1.0, 0.0], "borda": [0.0, 1.0], "elo": [1.0, 0.0], "win_rate": [0.5, 0.5]}
    weights = dict.fromkeys(rk.METHODS, 0.25)
    assert rk.fuse(ranks, weights) == pytest.approx([0.625, 0.375])
    # Prompt 0 wins: copeland and elo predicted it, borda did not, win_rate had no opinion.
    new = rk.update_weights(weights, ranks, 0, 1, share=0.8)
    assert new["copeland"] == new["elo"] > new["win_rate"] > new["borda"]
    assert sum(new.values()) == pytest.approx(1.0)
    assert rk.update_weights(weights, ranks, 0, 1, share=0.5) == weights  # a tie teaches nothing


def test_double_thompson_prefers_the_condorcet_winner() -> None:
    strong = [[0.0, 40.0, 40.0], [2.0, 0.0, 20.0], [2.0, 20.0, 0.0]]
    rng = random.Random(0)
    pairs = [rk.double_thompson(strong, ALL, rng) for _ in range(200)]
    assert all(a != b and {a, b} <= set(ALL) for a, b in pairs)
    assert sum(a == 0 for a, _ in pairs) > 150
    again = [rk.double_thompson(strong, ALL, random.Random(0)) for _ in range(3)]
    assert len(set(again)) == 1  # seeded
    with pytest.raises(ValueError, match="two prompts"):
        rk.double_thompson(strong, [0], rng)
