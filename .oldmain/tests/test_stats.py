"""Tests for reflex.checks.stats (paired significance statistics)."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from reflex.checks.stats import (
    PairedTest,
    bootstrap_ci,
    cohens_dz,
    paired_test,
    sign_flip_p,
    wilcoxon_signed_rank,
)


def _brute_force_sign_flip(diffs: list[float]) -> float:
    values = [d for d in diffs if d != 0]
    if not values:
        return 1.0
    observed = abs(sum(values))
    hits = 0
    for signs in itertools.product((1, -1), repeat=len(values)):
        if abs(sum(s * v for s, v in zip(signs, values, strict=False))) >= observed - 1e-12:
            hits += 1
    return hits / 2 ** len(values)


def _grid_exact_sign_flip(units: list[int]) -> float:
    """Exact sign-flip p for integer diffs via DP over the distribution of sums."""
    dist = {0: 1}
    for u in units:
        nxt: dict[int, int] = {}
        for s, c in dist.items():
            nxt[s + u] = nxt.get(s + u, 0) + c
            nxt[s - u] = nxt.get(s - u, 0) + c
        dist = nxt
    observed = abs(sum(units))
    return sum(c for s, c in dist.items() if abs(s) >= observed) / 2 ** len(units)


def _rand_diffs(rng: random.Random, n: int, shift: float = 0.0) -> list[float]:
    return [round(rng.gauss(shift, 1.0), 3) for _ in range(n)]


# --------------------------------------------------------------------------- #
# sign_flip_p
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("n", [1, 2, 5, 8, 11])
def test_exact_sign_flip_matches_brute_force(n: int) -> None:
    rng = random.Random(n)
    diffs = [*_rand_diffs(rng, n, shift=0.4), 0.0, 0.0]
    p, method = sign_flip_p(diffs)
    assert method == "exact sign-flip"
    assert p == pytest.approx(_brute_force_sign_flip(diffs), abs=1e-12)


@pytest.mark.parametrize("n", [4, 7, 10])
def test_exact_sign_flip_matches_scipy_permutation_test(n: int) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    np = pytest.importorskip("numpy")
    rng = random.Random(100 + n)
    base = [rng.random() for _ in range(n)]
    final = [min(1.0, b + rng.gauss(0.15, 0.2)) for b in base]
    diffs = [f - b for f, b in zip(final, base, strict=False)]
    res = scipy_stats.permutation_test(
        (np.array(final), np.array(base)),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        alternative="two-sided",
        n_resamples=np.inf,
    )
    p, _ = sign_flip_p(diffs)
    assert p == pytest.approx(res.pvalue, abs=1e-12)


def test_exact_sign_flip_ties_and_grid_values() -> None:
    diffs = [1.0, 1.0, -1.0, 0.5, 0.5, 0.5, -0.5, 1.0, 0.0]
    p, _ = sign_flip_p(diffs)
    assert p == pytest.approx(_brute_force_sign_flip(diffs), abs=1e-12)
    assert p == pytest.approx(_grid_exact_sign_flip([2, 2, -2, 1, 1, 1, -1, 2]), abs=1e-12)


def test_exact_sign_flip_at_n20_matches_the_grid() -> None:
    """n = 20 (2**20 sign patterns) is still exact by default; its cost is in bench/stats.py."""
    rng = random.Random(7)
    units = [rng.randint(-3, 6) or 1 for _ in range(20)]
    p, method = sign_flip_p([u / 10 for u in units])
    assert method == "exact sign-flip"
    assert p == pytest.approx(_grid_exact_sign_flip(units), abs=1e-12)


@pytest.mark.parametrize("n", [22, 25])
def test_monte_carlo_close_to_exact(n: int) -> None:
    rng = random.Random(n)
    units = [rng.randint(-3, 6) or 1 for _ in range(n)]
    diffs = [u / 10 for u in units]
    exact = _grid_exact_sign_flip(units)
    p_exact, m_exact = sign_flip_p(diffs, max_exact=30)
    assert m_exact == "exact sign-flip"
    assert p_exact == pytest.approx(exact, abs=1e-12)
    p_mc, method = sign_flip_p(diffs, seed=3)
    assert method == "monte-carlo sign-flip (20000)"
    assert abs(p_mc - exact) < 0.01
    assert sign_flip_p(diffs, seed=3) == (p_mc, method)


def test_monte_carlo_add_one_floor() -> None:
    p, _ = sign_flip_p([1.0] * 40, n_resamples=999)
    assert p == pytest.approx(1 / 1000)


def test_sign_flip_degenerate() -> None:
    assert sign_flip_p([]) == (1.0, "exact sign-flip")
    assert sign_flip_p([0.0, 0.0]) == (1.0, "exact sign-flip")
    assert sign_flip_p([0.5, -0.5])[0] == 1.0
    assert sign_flip_p([0.3])[0] == 1.0


# --------------------------------------------------------------------------- #
# wilcoxon_signed_rank
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("n", [1, 3, 6, 12, 25, 50])
def test_wilcoxon_exact_matches_scipy(n: int) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = random.Random(n)
    diffs = [rng.gauss(0.3, 1.0) for _ in range(n)] + [0.0, 0.0]
    expected = scipy_stats.wilcoxon(diffs, zero_method="wilcox", method="exact").pvalue
    assert wilcoxon_signed_rank(diffs) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    "diffs",
    [
        [0.1, 0.1, -0.2, 0.3, 0.3, 0.3, 0.0, 0.5, -0.1, 0.2],
        [1.0, 1.0, 1.0, -1.0, 2.0, 2.0, 0.0, 0.0, 3.0, -3.0, 4.0],
        [0.25] * 7,
        [1.0, -1.0],
    ],
)
def test_wilcoxon_ties_and_zeros_match_scipy_approx(diffs: list[float]) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    expected = scipy_stats.wilcoxon(
        diffs, zero_method="wilcox", method="approx", correction=True
    ).pvalue
    assert wilcoxon_signed_rank(diffs) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("n", [51, 80])
def test_wilcoxon_large_n_matches_scipy_approx(n: int) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = random.Random(n)
    diffs = [rng.gauss(0.2, 1.0) for _ in range(n)]
    expected = scipy_stats.wilcoxon(
        diffs, zero_method="wilcox", method="approx", correction=True
    ).pvalue
    assert wilcoxon_signed_rank(diffs) == pytest.approx(expected, abs=1e-9)


def test_wilcoxon_all_zero_is_none() -> None:
    assert wilcoxon_signed_rank([]) is None
    assert wilcoxon_signed_rank([0.0, 0.0]) is None


# --------------------------------------------------------------------------- #
# bootstrap_ci and effect size
# --------------------------------------------------------------------------- #
def test_bootstrap_ci_contains_mean_and_is_deterministic() -> None:
    rng = random.Random(1)
    diffs = _rand_diffs(rng, 40, shift=0.2)
    mean = sum(diffs) / len(diffs)
    low, high = bootstrap_ci(diffs, seed=5, n_bootstrap=2000)
    assert low < mean < high
    assert bootstrap_ci(diffs, seed=5, n_bootstrap=2000) == (low, high)
    assert bootstrap_ci(diffs, seed=6, n_bootstrap=2000) != (low, high)
    narrow = bootstrap_ci(diffs, seed=5, n_bootstrap=2000, level=0.5)
    assert low < narrow[0] < narrow[1] < high


def test_bootstrap_ci_degenerate() -> None:
    assert bootstrap_ci([]) == (0.0, 0.0)
    assert bootstrap_ci([0.0, 0.0, 0.0]) == (0.0, 0.0)
    assert bootstrap_ci([0.2, 0.2]) == (0.2, 0.2)
    with pytest.raises(ValueError):
        bootstrap_ci([1.0], level=1.0)


def test_cohens_dz_matches_manual() -> None:
    diffs = [0.1, 0.3, -0.1, 0.5, 0.2]
    mean = sum(diffs) / 5
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / 4)
    assert cohens_dz(diffs) == pytest.approx(mean / sd)
    assert cohens_dz([0.0, 0.0]) is None
    assert cohens_dz([0.4, 0.4, 0.4]) is None
    assert cohens_dz([0.4]) is None


# --------------------------------------------------------------------------- #
# paired_test
# --------------------------------------------------------------------------- #
def test_paired_test_pairs_by_id_ignoring_order() -> None:
    baseline = {"a": 0.1, "b": 0.5, "c": 0.2, "only_base": 0.9}
    final = {"c": 0.6, "only_final": 0.0, "a": 0.4, "b": 0.5}
    result = paired_test(baseline, final)
    assert result.n == 3
    assert result.n_nonzero == 2
    assert result.mean_diff == pytest.approx((0.3 + 0.0 + 0.4) / 3)
    reordered = paired_test(dict(reversed(baseline.items())), dict(sorted(final.items())))
    assert reordered == result


def test_paired_test_no_shared_ids() -> None:
    with pytest.raises(ValueError, match="share no example ids"):
        paired_test({"a": 1.0}, {"b": 1.0})


def test_paired_test_rejects_non_finite() -> None:
    with pytest.raises(ValueError, match="non-finite"):
        paired_test({"a": float("nan")}, {"a": 1.0})


def test_paired_test_strong_improvement_is_significant() -> None:
    rng = random.Random(0)
    ids = [f"ex{i}" for i in range(30)]
    baseline = {i: rng.uniform(0.2, 0.5) for i in ids}
    final = {i: s + rng.uniform(0.1, 0.4) for i, s in baseline.items()}
    result = paired_test(baseline, final, n_bootstrap=2000)
    assert isinstance(result, PairedTest)
    assert result.method == "monte-carlo sign-flip (20000)"
    assert result.significant and result.p_value < 0.001
    assert result.wilcoxon_p is not None and result.wilcoxon_p < 0.001
    assert 0 < result.ci_low < result.mean_diff < result.ci_high
    assert result.effect_size is not None and result.effect_size > 1
    assert result.summary().endswith(": significant")
    assert "monte-carlo sign-flip (20000), n=30" in result.summary()


def test_paired_test_identical_scores() -> None:
    scores = {f"ex{i}": i / 10 for i in range(10)}
    result = paired_test(scores, dict(scores))
    assert result.p_value == 1.0
    assert (result.ci_low, result.ci_high) == (0.0, 0.0)
    assert result.n_nonzero == 0
    assert result.wilcoxon_p is None
    assert result.effect_size is None
    assert not result.significant
    assert result.summary() == (
        "+0.000 (95% CI +0.000..+0.000), p=1.0000 (exact sign-flip, n=10): not significant"
    )


def test_paired_test_float_noise_is_not_a_difference() -> None:
    baseline = {"a": 0.1, "b": 0.7}
    final = {"a": 0.30000000000000004 - 0.2, "b": 0.7}
    assert paired_test(baseline, final).n_nonzero == 0


def test_to_dict_and_summary_format() -> None:
    result = PairedTest(
        n=20,
        n_nonzero=18,
        mean_diff=0.15,
        ci_low=0.05,
        ci_high=0.25,
        p_value=0.03125,
        method="exact sign-flip",
        wilcoxon_p=0.04,
        effect_size=0.8,
        significant=True,
        alpha=0.05,
    )
    assert result.summary() == (
        "+0.150 (95% CI +0.050..+0.250), p=0.0312 (exact sign-flip, n=20): significant"
    )
    d = result.to_dict()
    assert d["p_value"] == 0.03125 and d["method"] == "exact sign-flip"
    assert set(d) == {
        "n",
        "n_nonzero",
        "mean_diff",
        "ci_low",
        "ci_high",
        "p_value",
        "method",
        "wilcoxon_p",
        "effect_size",
        "significant",
        "alpha",
    }
