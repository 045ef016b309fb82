"""Evidence for keeping one candidate over another, and for a winner picked from many.

:func:`one_sided_p` is the acceptance gate's test: is the candidate better than the incumbent on
the same rows? It is the exact paired sign-flip test of :mod:`reflex.checks.stats`, one-sided
(half the two-sided p when the candidate's mean difference is positive, 1 otherwise).

:func:`best_of_many` corrects the winner of ``k`` candidates for having been picked from many
(a Westfall-Young single-step max-statistic test): under the null that no candidate differs
from the initial prompt, each val row's differences keep or flip their sign *together* across
the candidates (the rows are shared), and the statistic is the largest candidate's mean
difference. The winner's corrected p is the share of sign patterns whose maximum reaches the
winner's observed mean difference; the bound is the ``1 - alpha`` quantile of that maximum:
how far the best of these ``k`` candidates could rise above the initial prompt by chance on
these rows. Exact over every sign pattern for up to ``MAX_EXACT_ROWS`` informative rows, a
seeded Monte-Carlo estimate (add-one corrected) above. A candidate the search looked at on part
of the rows only (dropped by a race, scored on a trial's minibatch) is counted too: its own
differences on its rows, its mean absolute difference on every other row. Pure standard
library, deterministic for a given ``seed``: the Monte-Carlo patterns are the
``rng.choice((1, -1))`` of each row in turn, drawn in bulk, and integer differences are summed
by popcount, the partly seen candidates' too (:mod:`reflex.checks.resample`: the same figures as
the plain loops; 500 val rows, 8 candidates: ~0.5 s -> ~0.05 s, and 20 more seen on 8-40 rows:
~1 s -> ~0.13 s at a load of 6, bench/stats.py).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from reflex.checks.resample import coin_flips, integer_masks, masked_sum
from reflex.checks.stats import DIFF_DECIMALS, sign_flip_p

__all__ = [
    "MAX_EXACT_ROWS",
    "SelectionTest",
    "best_of_many",
    "one_sided_p",
    "paired_diffs",
    "selection_warnings",
]

#: Largest number of informative rows (a row where some candidate differs) enumerated exactly.
MAX_EXACT_ROWS = 12
#: Monte-Carlo sign patterns above :data:`MAX_EXACT_ROWS`.
N_RESAMPLES = 2_000
_DIGITS = bytes.maketrans(b"\x00\x01", b"01")  # a pattern's flips as binary digits


def paired_diffs(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """``after - before`` on the keys both scored (rounded as :func:`paired_test` rounds)."""
    return {k: round(after[k] - before[k], DIFF_DECIMALS) for k in sorted(before.keys() & after)}


def one_sided_p(diffs: Sequence[float], *, seed: int = 0) -> float:
    """One-sided paired sign-flip p that the mean of ``diffs`` is above 0 (1.0 when it is not)."""
    if not diffs or math.fsum(diffs) <= 0:
        return 1.0
    two_sided, _ = sign_flip_p(diffs, seed=seed)
    return min(1.0, two_sided / 2)


@dataclass(frozen=True)
class SelectionTest:
    """:func:`best_of_many`'s answer: the winner's mean difference over ``rows`` paired rows,
    its corrected p among ``k`` candidates (``seen`` of them on part of the rows only), and
    ``bound`` (the ``1 - alpha`` quantile of the best-of-k mean difference under the null);
    ``corrected`` is ``diff - bound``."""

    k: int
    rows: int
    diff: float
    p: float
    bound: float
    alpha: float
    method: str
    seen: int = 0  # of the k, the candidates seen on part of the rows only

    @property
    def corrected(self) -> float:
        return self.diff - self.bound

    @property
    def survived(self) -> bool:
        return self.diff > 0 and self.p < self.alpha

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "corrected": self.corrected, "survived": self.survived}


def _maxima(columns: Sequence[Sequence[float]], patterns: Sequence[Sequence[int]]) -> list[float]:
    """For each sign pattern, the largest candidate sum of signed row differences."""
    return [
        max(sum(s * d for s, d in zip(signs, col, strict=True)) for col in columns)
        for signs in patterns
    ]


@dataclass(frozen=True)
class _Seen:
    """A candidate seen on part of the rows: its differences by position on the rows it was
    scored on, and ``rate`` (its mean absolute difference there) on every other row."""

    known: tuple[tuple[int, float], ...]
    rate: float


def _seen_column(diffs: Mapping[str, float], keys: Sequence[str]) -> _Seen | None:
    where = {key: i for i, key in enumerate(keys)}
    known = tuple((where[k], d) for k, d in sorted(diffs.items()) if k in where)
    if not known:
        return None
    return _Seen(known, math.fsum(abs(d) for _, d in known) / len(known))


def _seen_maxima(
    maxima: list[float], seen: Sequence[_Seen], patterns: Sequence[Sequence[int]]
) -> list[float]:
    """``maxima`` raised by the candidates seen on part of the rows: each row it was not scored
    on differs by its ``rate``, its sign flipping with the row's, as the others' do."""
    out = []
    for best, signs in zip(maxima, patterns, strict=True):
        total = sum(signs)
        for column in seen:
            on = sum(signs[i] * d for i, d in column.known)
            rest = total - sum(signs[i] for i, _ in column.known)
            best = max(best, on + column.rate * rest)
        out.append(best)
    return out


def _sampled_maxima(
    columns: Sequence[Sequence[float]], seed: int, count: int, seen: Sequence[_Seen] = ()
) -> list[float]:
    """:func:`_seen_maxima` of :func:`_maxima` over ``count`` patterns of ``rng.choice((1, -1))``
    per row (row by row, pattern by pattern, ``rng = random.Random(seed)``), the same figures at
    a fraction of the cost: integer differences are summed by popcount, others as the loop sums
    them."""
    n = len(columns[0])
    flips = coin_flips(random.Random(seed), n * count)  # byte 1: the row's sign is -1
    full = [(round(math.fsum(col)), integer_masks(col)) for col in columns]
    part = [_seen_masks(column, n) for column in seen]
    totals = [(total, m) for total, m in full if m is not None]
    parts = [p for p in part if p is not None]
    if len(totals) < len(columns) or len(parts) < len(part):  # fractions: the loops' sums
        patterns = _patterns(flips, n, count)
        return _seen_maxima(_maxima(columns, patterns), seen, patterns)
    maxima = []
    for start in range(0, n * count, n):
        flipped = int(flips[start : start + n].translate(_DIGITS)[::-1], 2)
        best = float(max(total - 2 * masked_sum(m, flipped) for total, m in totals))
        if parts:
            signs = n - 2 * flipped.bit_count()  # the sum of the pattern's signs
            for on_total, masks, where, size, rate in parts:
                on = on_total - 2 * masked_sum(masks, flipped)
                rest = signs - size + 2 * (flipped & where).bit_count()
                best = max(best, on + rate * rest)
        maxima.append(best)
    return maxima


#: A partly seen candidate for popcounts: (the sum of its differences, their masks, the mask of
#: its rows, their number, its rate).
_SeenMasks = tuple[int, list[tuple[int, int]], int, int, float]


def _seen_masks(column: _Seen, n: int) -> _SeenMasks | None:
    """``column`` for popcounts; None when one of its differences is not an integer."""
    values = [0.0] * n
    for i, d in column.known:
        values[i] = d
    masks = integer_masks(values)
    if masks is None:
        return None
    where = sum(1 << i for i, _ in column.known)
    return round(math.fsum(values)), masks, where, len(column.known), column.rate


def _patterns(flips: bytes, n: int, count: int) -> list[list[int]]:
    signs = (1, -1)
    return [[signs[b] for b in flips[start : start + n]] for start in range(0, n * count, n)]


def best_of_many(
    candidates: Sequence[Mapping[str, float]],
    winner: int,
    *,
    alpha: float = 0.05,
    seed: int = 0,
    n_resamples: int = N_RESAMPLES,
    seen: Sequence[Mapping[str, float]] = (),
) -> SelectionTest:
    """The winner ``candidates[winner]`` corrected for the ``k`` candidates it was picked from.

    Each candidate is its per-row differences against the initial prompt (``{row: diff}``, as
    :func:`paired_diffs` gives); only the rows every candidate has are used. ``seen``: the
    candidates the search looked at on part of those rows only (dropped by a race, a trial's
    minibatch): each enters the maximum with its own differences on the rows it was scored on
    and, on every other row, a difference the size of its mean absolute difference on its rows
    (docs/selection.md says why); ``k`` counts them too.
    """
    if not candidates or not 0 <= winner < len(candidates):
        raise ValueError(f"winner {winner} is not one of {len(candidates)} candidates")
    k = len(candidates) + len(seen)
    keys = sorted(set.intersection(*(set(c) for c in candidates)))
    rows = len(keys)
    if not rows:
        return SelectionTest(k, 0, 0.0, 1.0, 0.0, alpha, "no paired rows", len(seen))
    partial = [c for c in (_seen_column(s, keys) for s in seen) if c is not None]
    # Rows where every candidate ties the initial prompt never change a sum: leave them out
    # (every row counts once a partly seen candidate is imputed a difference on it).
    imputed = any(c.rate for c in partial)
    informative = [r for r in keys if imputed or any(c[r] != 0 for c in candidates)]
    columns = [[c[r] for r in informative] for c in candidates]
    partial = [c for c in (_seen_column(s, informative) for s in seen) if c is not None]
    observed = math.fsum(columns[winner])
    n = len(informative)
    kind, named = "exact", f"{k} candidates"
    if seen:
        named += f", {len(seen)} seen on part of the rows"
    if n <= MAX_EXACT_ROWS:  # every sign pattern
        patterns = list(itertools.product((1, -1), repeat=n))
        maxima = _seen_maxima(_maxima(columns, patterns), partial, patterns)
    else:  # Monte-Carlo: popcounts over the same patterns
        kind, named = "monte-carlo", f"{named}, {n_resamples}"
        maxima = _sampled_maxima(columns, seed, n_resamples, partial)
    hits = sum(1 for m in maxima if m >= observed - 1e-9)
    p = hits / len(maxima) if kind == "exact" else (hits + 1) / (n_resamples + 1)
    ordered = sorted(maxima)
    bound = ordered[min(len(ordered) - 1, math.ceil((1 - alpha) * len(ordered)) - 1)] / rows
    diff = observed / rows
    method = f"{kind} max-statistic sign-flip ({named})"
    return SelectionTest(k, rows, diff, min(1.0, p), max(0.0, bound), alpha, method, len(seen))


def selection_warnings(selection: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """``selection_not_kept`` when the best-of-many correction gave the winner back to the
    initial prompt; ``selection_not_significant`` when a winner kept under another rule would
    not survive it (a record's ``OptimizationResult.selection``)."""
    if not selection or selection.get("survived"):
        return []
    what = (
        f"the best of {selection['k']} candidates (iteration {selection['iteration']}, val "
        f"{float(selection['diff']):+.3f} over the initial prompt on {selection['rows']} rows) "
        f"does not survive the best-of-{selection['k']} correction (p={float(selection['p']):.3g}"
        f", chance alone reaches {float(selection['bound']):+.3f})"
    )
    if not selection.get("kept"):
        return [{"kind": "selection_not_kept", "message": f"{what}: the initial prompt is kept"}]
    return [{"kind": "selection_not_significant", "message": what}]
