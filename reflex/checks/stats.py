"""Paired significance statistics for baseline-vs-final prompt comparisons.

Both prompts are scored on the same test examples, so the natural unit is the
per-example *paired difference* ``final - baseline``.  Everything here is pure
standard library (no numpy / scipy) and deterministic for a given ``seed``.

* :func:`sign_flip_p` -- the headline test: a two-sided paired permutation
  (sign-flip) test on ``|sum of diffs|``.  Exact for up to ``max_exact``
  non-zero differences (meet-in-the-middle enumeration of all ``2**n`` sign
  patterns), otherwise a seeded Monte-Carlo estimate with add-one correction.
* :func:`wilcoxon_signed_rank` -- Wilcoxon signed-rank test, matching
  ``scipy.stats.wilcoxon(d, zero_method="wilcox")`` (``method="exact"`` when
  there are no ties and at most 50 non-zero diffs, otherwise
  ``method="approx", correction=True``).
* :func:`bootstrap_ci` -- percentile bootstrap CI of the mean difference.
* :func:`paired_test` -- pairs two ``{example_id: score}`` mappings and bundles
  all of the above into a :class:`PairedTest`.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache

from reflex.checks.resample import bootstrap_sums, integer_masks
from reflex.data.json_types import JSONScalar

__all__ = [
    "PairedTest",
    "bootstrap_ci",
    "cohens_dz",
    "paired_test",
    "sign_flip_p",
    "wilcoxon_signed_rank",
]

#: Largest number of non-zero differences for which the exact sign-flip test runs.
MAX_EXACT = 20
#: Monte-Carlo resamples for the sign-flip test above :data:`MAX_EXACT`.
N_RESAMPLES = 20_000
#: Largest number of non-zero differences for the exact Wilcoxon distribution.
WILCOXON_MAX_EXACT = 50
#: Paired differences are rounded to this many decimals in :func:`paired_test`,
#: so float noise (``0.3 - 0.1 != 0.2``) creates neither fake non-zeros nor fake
#: non-ties.
DIFF_DECIMALS = 12

_CHUNK_BITS = 8  # one byte of random bits per lookup table (see _monte_carlo_sign_flip)


@dataclass(frozen=True)
class PairedTest:
    """Result of :func:`paired_test` (differences are ``final - baseline``)."""

    n: int
    n_nonzero: int
    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    method: str
    wilcoxon_p: float | None
    effect_size: float | None
    significant: bool
    alpha: float

    def to_dict(self) -> dict[str, JSONScalar]:
        """Plain JSON-serialisable dict of all fields."""
        return asdict(self)

    def summary(self) -> str:
        """One line, e.g. ``+0.150 (95% CI +0.050..+0.250), p=0.0312 (...): significant``."""
        verdict = "significant" if self.significant else "not significant"
        return (
            f"{self.mean_diff:+.3f} (95% CI {self.ci_low:+.3f}..{self.ci_high:+.3f}), "
            f"{_format_p(self.p_value)} ({self.method}, n={self.n}): {verdict}"
        )


def _format_p(p: float) -> str:
    return "p<0.0001" if p < 1e-4 else f"p={p:.4f}"


def _nonzero(diffs: Iterable[float]) -> list[float]:
    return [float(d) for d in diffs if d != 0]


def _tolerance(values: Sequence[float]) -> float:
    """Absolute slack for ``>=`` comparisons of sums of ``values``."""
    return 1e-12 * max(1.0, sum(abs(v) for v in values))


# --------------------------------------------------------------------------- #
# Sign-flip (paired permutation) test
# --------------------------------------------------------------------------- #
def _signed_subset_sums(values: Sequence[float]) -> list[float]:
    """All ``2**len(values)`` sums ``sum(+-v)``."""
    sums = [0.0]
    for v in values:
        sums = [s + v for s in sums] + [s - v for s in sums]
    return sums


def _exact_sign_flip(values: Sequence[float], threshold: float) -> float:
    """Fraction of sign patterns with ``|sum| >= threshold`` (meet in the middle)."""
    if threshold <= 0:
        return 1.0
    half = len(values) // 2
    left = _signed_subset_sums(values[:half])
    right = sorted(_signed_subset_sums(values[half:]))
    total = len(right)
    count = 0
    for a in left:
        count += total - bisect_left(right, threshold - a)
        count += bisect_right(right, -threshold - a)
    return count / (len(left) * total)


def _chunk_tables(values: Sequence[float]) -> list[list[float]]:
    """Per 8-value chunk: table[mask] = sum of the chunk's values selected by mask."""
    tables = []
    for start in range(0, len(values), _CHUNK_BITS):
        table = [0.0]
        for v in values[start : start + _CHUNK_BITS]:
            table += [s + v for s in table]
        tables.append(table)
    return tables


def _monte_carlo_sign_flip(
    values: Sequence[float], threshold: float, seed: int, n_resamples: int
) -> float:
    """Add-one corrected Monte-Carlo estimate of the two-sided sign-flip p-value.

    Each byte of a random bit pattern picks which of 8 values get their sign
    flipped; the flipped sum is ``total - 2 * sum(selected)``, looked up per byte
    (integer diffs: counted by popcount over the same bits, :mod:`reflex.checks.resample`).
    """
    rng = random.Random(seed)
    n = len(values)
    total = math.fsum(values)
    masks = integer_masks(values)
    hits = 0
    if masks is not None:  # integer diffs: the selected sum by popcount (exact, as the tables')
        draw = rng.getrandbits
        for _ in range(n_resamples):
            bits = draw(n)
            chosen = 0
            for value, mask in masks:
                chosen += value * (bits & mask).bit_count()
            hits += abs(total - 2.0 * chosen) >= threshold
        return (hits + 1) / (n_resamples + 1)
    tables = _chunk_tables(values)
    n_bytes = len(tables)
    for _ in range(n_resamples):
        flips = rng.getrandbits(n).to_bytes(n_bytes, "little")
        selected = sum(map(list.__getitem__, tables, flips))
        if abs(total - 2.0 * selected) >= threshold:
            hits += 1
    return (hits + 1) / (n_resamples + 1)


def sign_flip_p(
    diffs: Iterable[float],
    *,
    seed: int = 0,
    max_exact: int = MAX_EXACT,
    n_resamples: int = N_RESAMPLES,
) -> tuple[float, str]:
    """Two-sided paired sign-flip test of ``mean(diffs) == 0``.

    The statistic is ``|sum(diffs)|``; zero diffs are dropped (they do not
    change under a sign flip).  Returns ``(p_value, method)``: exact over all
    ``2**n`` sign patterns when ``n_nonzero <= max_exact``, otherwise a
    Monte-Carlo estimate ``(hits + 1) / (n_resamples + 1)`` seeded by ``seed``.
    """
    values = _nonzero(diffs)
    exact = "exact sign-flip"
    if not values:
        return 1.0, exact
    threshold = abs(math.fsum(values)) - _tolerance(values)
    if len(values) <= max_exact:
        return min(1.0, _exact_sign_flip(values, threshold)), exact
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    p = _monte_carlo_sign_flip(values, threshold, seed, n_resamples)
    return min(1.0, p), f"monte-carlo sign-flip ({n_resamples})"


# --------------------------------------------------------------------------- #
# Wilcoxon signed-rank test
# --------------------------------------------------------------------------- #
def _average_ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """1-based average ranks of ``values`` and the sizes of the tie groups."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    groups: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        groups.append(j - i + 1)
        i = j + 1
    return ranks, groups


@lru_cache(maxsize=64)
def _wilcoxon_counts(n: int) -> tuple[int, ...]:
    """counts[k] = number of subsets of ``{1..n}`` with sum ``k`` (exact ints)."""
    counts = [1] + [0] * (n * (n + 1) // 2)
    top = 0
    for r in range(1, n + 1):
        top += r
        for k in range(top, r - 1, -1):
            counts[k] += counts[k - r]
    return tuple(counts)


def _wilcoxon_exact_p(r_plus: float, n: int) -> float:
    counts = _wilcoxon_counts(n)
    total = 2**n
    cdf = sum(counts[: math.ceil(r_plus) + 1]) / total
    sf = sum(counts[math.floor(r_plus) :]) / total
    return float(min(1.0, 2.0 * min(cdf, sf)))


def _wilcoxon_normal_p(r_plus: float, n: int, groups: Sequence[int]) -> float:
    """Normal approximation with tie and continuity correction (scipy's recipe)."""
    mean = n * (n + 1) / 4
    tie_term = sum(t**3 - t for t in groups) / 2
    se = math.sqrt((n * (n + 1) * (2 * n + 1) - tie_term) / 24)
    z = (r_plus - mean) / se
    if z != 0:
        z -= math.copysign(0.5 / se, z)
    return math.erfc(abs(z) / math.sqrt(2))


def wilcoxon_signed_rank(diffs: Iterable[float]) -> float | None:
    """Two-sided Wilcoxon signed-rank p-value, or ``None`` if all diffs are zero.

    Zero diffs are dropped (``zero_method="wilcox"``) and ties get average
    ranks.  Uses the exact null distribution when there are no ties and at most
    :data:`WILCOXON_MAX_EXACT` non-zero diffs, otherwise the normal
    approximation with tie and continuity correction.  Matches
    ``scipy.stats.wilcoxon(d, zero_method="wilcox", method=...)``.
    """
    values = _nonzero(diffs)
    if not values:
        return None
    ranks, groups = _average_ranks([abs(v) for v in values])
    r_plus = sum(r for r, v in zip(ranks, values, strict=True) if v > 0)
    n = len(values)
    has_ties = any(t > 1 for t in groups)
    if not has_ties and n <= WILCOXON_MAX_EXACT:
        return _wilcoxon_exact_p(r_plus, n)
    return _wilcoxon_normal_p(r_plus, n, groups)


# --------------------------------------------------------------------------- #
# Bootstrap CI and effect size
# --------------------------------------------------------------------------- #
def _quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linearly interpolated quantile (numpy's default ``"linear"`` method)."""
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    frac = pos - lo
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


def bootstrap_ci(
    diffs: Iterable[float],
    *,
    seed: int = 0,
    n_bootstrap: int = 10_000,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of ``diffs`` (``random.Random(seed)``).

    Returns ``(0.0, 0.0)`` for no diffs; constant diffs give a zero-width CI.
    """
    values = [float(d) for d in diffs]
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n_bootstrap < 1:
        raise ValueError(f"n_bootstrap must be >= 1, got {n_bootstrap}")
    if not values:
        return 0.0, 0.0
    if all(v == values[0] for v in values):
        return values[0], values[0]
    rng = random.Random(seed)
    n = len(values)
    sums = bootstrap_sums(values, rng, n_bootstrap)  # integers: the same draws, in bulk
    if sums is not None:
        means = sorted(s / n for s in sums)
    else:
        means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(n_bootstrap))
    tail = (1 - level) / 2
    return _quantile(means, tail), _quantile(means, 1 - tail)


def cohens_dz(diffs: Iterable[float]) -> float | None:
    """Cohen's d_z = mean / sample sd of the diffs; ``None`` if n < 2 or sd == 0."""
    values = [float(d) for d in diffs]
    n = len(values)
    if n < 2:
        return None
    mean = math.fsum(values) / n
    if max(values) - min(values) <= 1e-12 * max(1.0, abs(mean)):
        return None  # sd == 0 (up to float noise): d_z is undefined / infinite
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return mean / math.sqrt(var)


# --------------------------------------------------------------------------- #
# Front door
# --------------------------------------------------------------------------- #
def _paired_diffs(baseline: Mapping[str, float], final: Mapping[str, float]) -> list[float]:
    shared = sorted(set(baseline) & set(final), key=str)
    if not shared:
        raise ValueError(
            f"baseline ({len(baseline)} examples) and final ({len(final)} examples) "
            "share no example ids; score both prompts on the same test set"
        )
    diffs = []
    for key in shared:
        b, f = float(baseline[key]), float(final[key])
        if not (math.isfinite(b) and math.isfinite(f)):
            raise ValueError(f"non-finite score for example {key!r}: baseline={b}, final={f}")
        diffs.append(round(f - b, DIFF_DECIMALS))
    return diffs


def paired_test(
    baseline: Mapping[str, float],
    final: Mapping[str, float],
    *,
    alpha: float = 0.05,
    seed: int = 0,
    n_bootstrap: int = 10_000,
) -> PairedTest:
    """Compare per-example scores of two prompts, paired by example id.

    Only ids present in both mappings are used (order is irrelevant); raises
    ``ValueError`` if none are shared.  ``p_value`` is the sign-flip test.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    diffs = _paired_diffs(baseline, final)
    n = len(diffs)
    n_nonzero = sum(1 for d in diffs if d != 0)
    p_value, method = sign_flip_p(diffs, seed=seed)
    ci_low, ci_high = bootstrap_ci(diffs, seed=seed, n_bootstrap=n_bootstrap)
    return PairedTest(
        n=n,
        n_nonzero=n_nonzero,
        mean_diff=math.fsum(diffs) / n,
        ci_low=ci_low,
        ci_high=ci_high,
        p_value=p_value,
        method=method,
        wilcoxon_p=wilcoxon_signed_rank(diffs),
        effect_size=cohens_dz(diffs),
        significant=p_value < alpha,
        alpha=alpha,
    )
