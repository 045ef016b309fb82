"""The paired test's power and minimum detectable effect (reflex.checks.power)."""

from __future__ import annotations

import itertools
import math

import pytest

from reflex.checks.power import (
    mde_binary,
    mde_continuous,
    minimum_detectable_effect,
    sign_test_power,
)
from reflex.checks.stats import sign_flip_p


def _brute_force_power(n: int, fixed: float, broken: float, alpha: float = 0.05) -> float:
    """Every outcome of n rows (+1, -1, 0), weighted, tested with the project's own test."""
    power = 0.0
    for rows in itertools.product((1.0, -1.0, 0.0), repeat=n):
        same = 1 - fixed - broken
        weight = math.prod(fixed if r > 0 else broken if r < 0 else same for r in rows)
        if any(rows) and sign_flip_p(list(rows))[0] < alpha:
            power += weight
    return power


@pytest.mark.parametrize(("n", "fixed", "broken"), [(6, 0.5, 0.0), (8, 0.4, 0.1), (9, 0.6, 0.2)])
def test_the_exact_power_is_the_sign_flip_test_s(n: int, fixed: float, broken: float) -> None:
    assert sign_test_power(n, fixed, broken) == pytest.approx(_brute_force_power(n, fixed, broken))


def test_twenty_test_rows_cannot_show_a_five_point_gain() -> None:
    # The example: even when the new prompt breaks no row, 20 rows need a big gain.
    found = mde_binary(20)
    assert found is not None and found > 0.3
    assert sign_test_power(20, 0.05, 0.0) < 0.1


def test_the_mde_is_where_the_power_reaches_80_percent() -> None:
    found = mde_binary(60)
    assert found is not None
    assert sign_test_power(60, found, 0.0) >= 0.8 > sign_test_power(60, found - 0.01, 0.0)


def test_broken_rows_raise_the_mde_and_more_rows_lower_it() -> None:
    values = [mde_binary(n) for n in (20, 50, 100, 400)]
    assert all(v is not None for v in values)
    assert values == sorted(values, reverse=True)  # type: ignore[type-var]
    best, worse = mde_binary(100), mde_binary(100, broken_per_fixed=0.25)
    assert best is not None and worse is not None and worse > best


def test_too_few_rows_show_nothing() -> None:
    # 5 changed rows all fixed: p = 2/32 = 0.0625, never below 0.05.
    assert mde_binary(5) is None
    assert mde_binary(12, broken_per_fixed=0.25) is None


def test_the_normal_approximation_takes_over_close_to_the_exact_figure() -> None:
    import reflex.checks.power as power

    exact = mde_binary(400)
    saved = power.EXACT_ROWS
    try:
        power.EXACT_ROWS = 0
        approx = mde_binary(400)
    finally:
        power.EXACT_ROWS = saved
    assert exact is not None and approx is not None
    assert approx == pytest.approx(exact, rel=0.1)


def test_the_continuous_mde_is_the_normal_formula() -> None:
    # (1.95996 + 0.84162) x sd / sqrt(n)
    assert mde_continuous(100, 0.25) == pytest.approx(2.80158 * 0.25 / 10, rel=1e-4)
    assert minimum_detectable_effect(4, binary=False, sd=1.0) is None  # above 1: none
    assert minimum_detectable_effect(100, binary=True) == mde_binary(100)


def test_a_bad_ratio_is_refused() -> None:
    with pytest.raises(ValueError, match="broken_per_fixed"):
        mde_binary(50, broken_per_fixed=1.0)
