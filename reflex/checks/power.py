"""Statistical power of the run's paired test: the smallest gain a test split can show.

The run compares the final prompt with the baseline by a two-sided paired sign-flip test
(:func:`reflex.checks.stats.paired_test`, significant when p < alpha). Before paying for a
run, :func:`minimum_detectable_effect` says which mean gain that test finds significant with
the given power (80% by default, alpha 0.05) on ``n`` paired rows:

* **Binary scores** (exact match and other 0/1 metrics): a row's difference is +1 (fixed),
  -1 (broken) or 0. Given the number of non-zero differences, the sign-flip test on them is
  the exact two-sided sign test (McNemar's exact test), so the power is computed exactly
  (:func:`sign_test_power`), summing over the binomial count of changed rows. The effect is
  ``p_fixed - p_broken``; the test also depends on how many rows change at all, which no
  one knows before the run, so it is stated as an assumption: ``broken_per_fixed`` rows
  broken for every row fixed (0: the new prompt breaks nothing, the most favourable case,
  so no smaller gain can be shown whatever happens).
* **Continuous scores** (F1, ROUGE, a judge's grade): the normal approximation of the paired
  test, ``(z(1 - alpha/2) + z(power)) * sd / sqrt(n)``, for an assumed standard deviation
  ``sd`` of the per-row differences (the sign-flip test's power approaches the paired t-test's
  as n grows; for n below ~20 the figure is optimistic).

Pure standard library, deterministic.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

__all__ = ["minimum_detectable_effect", "mde_binary", "mde_continuous", "sign_test_power"]

ALPHA = 0.05
POWER = 0.8
#: Above this many rows the binary case uses the normal approximation of the sign test.
EXACT_ROWS = 500
_TAIL = 1e-12  # counts of changed rows less likely than this are left out of the sum


def _log_pmf(k: int, n: int, p: float) -> float:
    if p <= 0.0:
        return 0.0 if k == 0 else -math.inf
    if p >= 1.0:
        return 0.0 if k == n else -math.inf
    log_comb = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
    return log_comb + k * math.log(p) + (n - k) * math.log1p(-p)


@lru_cache(maxsize=4096)
def _critical(k: int, alpha: float) -> int | None:
    """The fewest "fixed" rows out of ``k`` changed ones the exact two-sided sign test finds
    significant (p < alpha); None when no split of ``k`` rows is (k too small)."""
    tail = 0.0  # P(J >= j) under the null, j from k down
    best = None
    for j in range(k, (k + 1) // 2 - 1, -1):
        tail += math.exp(_log_pmf(j, k, 0.5))
        p_two_sided = 1.0 if 2 * j == k else min(1.0, 2 * tail)
        if p_two_sided < alpha:
            best = j
        else:
            break
    return best


def _binomial_tail(k: int, q: float, low: int, high: int) -> float:
    """P(J >= high) + P(J <= low) for J ~ Binomial(k, q)."""
    upper = sum(math.exp(_log_pmf(j, k, q)) for j in range(high, k + 1))
    lower = sum(math.exp(_log_pmf(j, k, q)) for j in range(0, low + 1)) if low >= 0 else 0.0
    return upper + lower


def sign_test_power(n: int, p_fixed: float, p_broken: float, alpha: float = ALPHA) -> float:
    """The exact power of the two-sided sign test on ``n`` paired binary rows, each fixed with
    probability ``p_fixed``, broken with ``p_broken``, unchanged otherwise."""
    changed = p_fixed + p_broken
    if n <= 0 or changed <= 0.0:
        return 0.0
    q = p_fixed / changed
    mean, sd = n * changed, math.sqrt(n * changed * (1 - changed)) or 1.0
    lo, hi = max(0, int(mean - 9 * sd) - 1), min(n, int(mean + 9 * sd) + 1)
    power = 0.0
    for k in range(lo, hi + 1):
        weight = math.exp(_log_pmf(k, n, changed))
        if weight < _TAIL:
            continue
        critical = _critical(k, alpha)
        if critical is not None:
            power += weight * _binomial_tail(k, q, k - critical, critical)
    return min(1.0, power)


def _normal_sign_power(n: int, p_fixed: float, p_broken: float, alpha: float) -> float:
    """The sign test's power by the normal approximation (McNemar's z), for large ``n``."""
    changed, effect = p_fixed + p_broken, p_fixed - p_broken
    spread = changed - effect * effect
    if changed <= 0 or spread <= 0:
        return 1.0 if effect > 0 else 0.0
    z = NormalDist().inv_cdf(1 - alpha / 2)
    shift = math.sqrt(n) * abs(effect) - z * math.sqrt(changed)
    return NormalDist().cdf(shift / math.sqrt(spread))


def mde_binary(
    n: int,
    *,
    broken_per_fixed: float = 0.0,
    alpha: float = ALPHA,
    power: float = POWER,
) -> float | None:
    """The smallest gain (``p_fixed - p_broken``) the sign test finds with ``power`` on ``n``
    binary rows when ``broken_per_fixed`` rows break for each row fixed; None when none can."""
    if not 0 <= broken_per_fixed < 1:
        raise ValueError(f"broken_per_fixed must be in [0, 1), got {broken_per_fixed}")
    ratio = broken_per_fixed
    largest = (1 - ratio) / (1 + ratio)  # every row changes: p_fixed + p_broken = 1

    def power_at(effect: float) -> float:
        fixed = effect / (1 - ratio)
        if n > EXACT_ROWS:
            return _normal_sign_power(n, fixed, ratio * fixed, alpha)
        return sign_test_power(n, fixed, ratio * fixed, alpha)

    if n <= 0 or power_at(largest) < power:
        return None
    low, high = 0.0, largest
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (low, mid) if power_at(mid) >= power else (mid, high)
        if high - low < 1e-4:
            break
    return high


def mde_continuous(n: int, sd: float, *, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest mean gain the paired test finds with ``power`` on ``n`` rows whose
    differences have standard deviation ``sd`` (normal approximation)."""
    if n <= 0:
        return math.inf
    normal = NormalDist()
    return (normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)) * sd / math.sqrt(n)


def minimum_detectable_effect(
    n: int,
    *,
    binary: bool,
    broken_per_fixed: float = 0.0,
    sd: float = 0.25,
    alpha: float = ALPHA,
    power: float = POWER,
) -> float | None:
    """:func:`mde_binary` for 0/1 scores, else :func:`mde_continuous` with ``sd``."""
    if binary:
        return mde_binary(n, broken_per_fixed=broken_per_fixed, alpha=alpha, power=power)
    found = mde_continuous(n, sd, alpha=alpha, power=power)
    return found if found <= 1.0 else None
