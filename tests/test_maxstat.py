"""The acceptance test and the best-of-many correction (reflex.checks.maxstat)."""

from __future__ import annotations

import itertools

import pytest

from reflex.checks.maxstat import (
    best_of_many,
    one_sided_p,
    paired_diffs,
    selection_warnings,
)


def test_one_more_correct_row_of_six_is_p_one_half() -> None:
    assert one_sided_p([0, 0, 1, 0, 0, 0]) == pytest.approx(0.5)


def test_five_clean_wins_pass_and_four_do_not() -> None:
    assert one_sided_p([1] * 5 + [0] * 35) == pytest.approx(1 / 32)
    assert one_sided_p([1] * 4 + [0] * 36) == pytest.approx(1 / 16)


def test_a_candidate_no_better_is_p_one() -> None:
    assert one_sided_p([1, -1]) == 1.0
    assert one_sided_p([-1, -1, -1]) == 1.0
    assert one_sided_p([]) == 1.0


def test_paired_diffs_pair_by_key_and_round() -> None:
    assert paired_diffs({"a": 0.1, "b": 1.0, "c": 0.0}, {"a": 0.3, "b": 0.0}) == {
        "a": pytest.approx(0.2),
        "b": -1.0,
    }


def _brute_force_p(columns: list[list[float]], winner: int) -> float:
    observed = sum(columns[winner])
    hits = total = 0
    for signs in itertools.product((1, -1), repeat=len(columns[0])):
        total += 1
        best = max(sum(s * d for s, d in zip(signs, col, strict=True)) for col in columns)
        hits += best >= observed - 1e-9
    return hits / total


def test_one_candidate_is_the_plain_one_sided_test() -> None:
    diffs = {f"r{i}": d for i, d in enumerate([1, 1, 1, 1, 1, 1, 0, 0, -1])}
    test = best_of_many([diffs], 0)
    assert test.p == pytest.approx(one_sided_p(list(diffs.values())))
    assert test.k == 1 and test.rows == 9


def test_the_corrected_p_is_the_exact_max_statistic() -> None:
    a = [1, 1, 1, 0, 0, 1, 0, -1]
    b = [0, 1, 1, 1, 0, 0, 0, 0]
    c = [1, 0, 0, 0, 1, 0, 1, 0]
    candidates = [{f"r{i}": d for i, d in enumerate(col)} for col in (a, b, c)]
    test = best_of_many(candidates, 0)
    assert test.p == pytest.approx(_brute_force_p([a, b, c], 0))
    assert test.method.startswith("exact")


def test_more_candidates_make_the_same_winner_less_significant() -> None:
    winner = {f"r{i}": (1.0 if i < 6 else 0.0) for i in range(12)}
    alone = best_of_many([winner], 0)
    noise = [{f"r{i}": (1.0 if (i - j) % 12 < 6 else 0.0) for i in range(12)} for j in (2, 4, 6)]
    many = best_of_many([winner, *noise], 0)
    assert alone.survived
    assert many.p > alone.p
    assert many.bound >= alone.bound > 0


def test_many_rows_use_a_seeded_monte_carlo_estimate() -> None:
    rows = 40
    winner = {f"r{i}": (1.0 if i % 4 == 0 else 0.0) for i in range(rows)}
    other = {f"r{i}": (1.0 if i % 5 == 0 else -1.0 if i % 7 == 0 else 0.0) for i in range(rows)}
    first = best_of_many([winner, other], 0, seed=3)
    assert first == best_of_many([winner, other], 0, seed=3)
    assert first.method.startswith("monte-carlo")
    assert first.survived and first.diff == pytest.approx(10 / 40)
    assert 0 < first.bound < first.diff


def test_the_winner_must_be_one_of_the_candidates() -> None:
    with pytest.raises(ValueError, match="winner"):
        best_of_many([{"a": 1.0}], 1)


def test_selection_warnings_say_whether_the_initial_prompt_was_kept() -> None:
    base = {"k": 5, "iteration": 3, "diff": 0.1, "rows": 10, "p": 0.2, "bound": 0.15}
    assert selection_warnings(None) == []
    assert selection_warnings({**base, "survived": True, "kept": True}) == []
    [gone] = selection_warnings({**base, "survived": False, "kept": False})
    assert gone["kind"] == "selection_not_kept" and "initial prompt is kept" in gone["message"]
    [kept] = selection_warnings({**base, "survived": False, "kept": True})
    assert kept["kind"] == "selection_not_significant"


def test_a_candidate_seen_on_part_of_the_rows_counts_at_its_rate_elsewhere() -> None:
    """A candidate dropped after 4 of 10 rows (2 of them differ) enters the maximum with its
    own differences there and a difference of its rate (0.5) on the 6 other rows."""
    winner = [1, 1, 1, 1, 1, 0, 0, 0, 0, -1]
    part = {"r0": 1.0, "r1": -1.0, "r2": 0.0, "r3": 0.0}
    imputed = [1, -1, 0, 0] + [0.5] * 6
    alone = best_of_many([{f"r{i}": d for i, d in enumerate(winner)}], 0)
    counted = best_of_many([{f"r{i}": d for i, d in enumerate(winner)}], 0, seen=[part])
    assert counted.p == pytest.approx(_brute_force_p([winner, imputed], 0))
    assert counted.p > alone.p and counted.bound >= alone.bound
    assert (counted.k, counted.seen, alone.k, alone.seen) == (2, 1, 1, 0)
    assert counted.rows == alone.rows == 10 and counted.diff == alone.diff
    assert "1 seen on part of the rows" in counted.method


def test_a_seen_candidate_that_ties_everywhere_it_was_scored_adds_only_to_k() -> None:
    winner = {f"r{i}": (1.0 if i < 5 else 0.0) for i in range(10)}
    alone = best_of_many([winner], 0)
    counted = best_of_many([winner], 0, seen=[{"r7": 0.0, "r8": 0.0}])
    assert counted.p == alone.p and counted.bound == alone.bound
    assert counted.k == 2 and counted.to_dict()["seen"] == 1
