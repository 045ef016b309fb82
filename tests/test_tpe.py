"""mipro's TPE boundary: a suggestion is a function of the seed and the past trials it is told."""

from __future__ import annotations

import sys

import pytest

from reflex_strategies._tpe import OPTUNA_MISSING, Space, Trial, optuna_available, suggest

SPACE = Space(instructions=4, demo_sets=3, demo_counts=(0, 1, 2, 4))


def scored(chosen: Trial) -> Trial:
    """Instruction 2 with two demos scores 1.0, anything else 0.2."""
    best = chosen.instruction == 2 and chosen.demos == 2
    return Trial(chosen.instruction, chosen.demo_set, chosen.demos, 1.0 if best else 0.2)


def search(seed: int, trials: int, startup: int = 5) -> list[Trial]:
    past: list[Trial] = []
    for n in range(trials):
        past.append(scored(suggest(SPACE, past, seed=seed * 1000 + n, startup=startup)))
    return past


def test_the_same_seed_and_past_give_the_same_suggestion() -> None:
    past = search(0, 12)
    again = [suggest(SPACE, past, seed=7, startup=5) for _ in range(3)]
    assert again[0] == again[1] == again[2]
    assert search(0, 12) == past  # a fresh study per ask: nothing carried between them


def test_after_the_startup_trials_tpe_returns_to_what_scored_well() -> None:
    past = search(0, 40)
    later = past[5:]
    hits = sum(1 for t in later if t.instruction == 2 and t.demos == 2)
    assert hits / len(later) > 0.2  # at random: 1/4 x 1/4 = 6% (here: 11 of 35)


def test_the_space_counts_distinct_prompts() -> None:
    assert SPACE.size == 4 * (3 * 3 + 1)  # with 0 demos the demo set does not matter
    assert Space(1, 1, (0,)).size == 1


def test_a_missing_optuna_is_told_before_any_import(monkeypatch: pytest.MonkeyPatch) -> None:
    assert optuna_available()
    monkeypatch.setitem(sys.modules, "optuna", None)
    assert not optuna_available()
    assert "pip install 'aevyra-reflex[mipro]'" in OPTUNA_MISSING and "\n" not in OPTUNA_MISSING
