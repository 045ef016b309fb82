"""Bulk draws that are the plain loops' draws (reflex.checks.resample), and the tests that use
them giving the figures the plain loops give."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from reflex.checks import maxstat, resample, stats
from reflex.checks.resample import coin_flips, integer_masks, masked_sum


@pytest.mark.parametrize("seed", [0, 1, 7, 12345])
@pytest.mark.parametrize("count", [1, 2, 31, 500, 20_000])
def test_coin_flips_are_the_choices_of_one_or_minus_one(seed: int, count: int) -> None:
    loop = random.Random(seed)
    expected = [loop.choice((1, -1)) for _ in range(count)]
    flips = coin_flips(random.Random(seed), count)
    assert [(1, -1)[b] for b in flips] == expected


def test_coin_flips_continue_the_same_stream_across_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import reflex.checks.resample as resample

    monkeypatch.setattr(resample, "_WORDS", 64)  # many small batches
    loop = random.Random(3)
    expected = [loop.choice((1, -1)) for _ in range(5_000)]
    assert [(1, -1)[b] for b in coin_flips(random.Random(3), 5_000)] == expected


def test_integer_masks_sum_the_rows_of_a_bit_mask() -> None:
    values = [1.0, -1.0, 0.0, 3.0, 1.0, -2.0]
    masks = integer_masks(values)
    assert masks is not None
    for rows in range(1 << len(values)):
        chosen = [v for j, v in enumerate(values) if rows >> j & 1]
        assert masked_sum(masks, rows) == sum(chosen)


def test_integer_masks_refuse_fractions_and_too_many_values() -> None:
    assert integer_masks([1.0, 0.5]) is None
    assert integer_masks([float("nan")]) is None
    assert integer_masks([float(v) for v in range(1, 70)]) is None
    assert integer_masks([0.0, 0.0]) == []


def _loop_best_of_many(
    candidates: list[dict[str, float]], winner: int, seed: int, n_resamples: int
) -> maxstat.SelectionTest:
    """best_of_many's Monte-Carlo branch as the plain loops compute it (the reference)."""
    keys = sorted(set.intersection(*(set(c) for c in candidates)))
    informative = [k for k in keys if any(c[k] != 0 for c in candidates)]
    columns = [[c[k] for k in informative] for c in candidates]
    observed = math.fsum(columns[winner])
    rng = random.Random(seed)
    patterns = [[rng.choice((1, -1)) for _ in informative] for _ in range(n_resamples)]
    maxima = [
        max(sum(s * d for s, d in zip(signs, col, strict=True)) for col in columns)
        for signs in patterns
    ]
    hits = sum(1 for m in maxima if m >= observed - 1e-9)
    ordered = sorted(maxima)
    bound = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)] / len(keys)
    return maxstat.SelectionTest(
        len(candidates),
        len(keys),
        observed / len(keys),
        min(1.0, (hits + 1) / (n_resamples + 1)),
        max(0.0, bound),
        0.05,
        f"monte-carlo max-statistic sign-flip ({len(candidates)} candidates, {n_resamples})",
    )


@pytest.mark.parametrize(
    ("values", "rows", "k"),
    [
        ((-1.0, 0.0, 0.0, 1.0), 40, 1),
        ((-1.0, 0.0, 0.0, 1.0), 300, 5),
        ((-2.0, -1.0, 0.0, 3.0), 57, 3),
        ((0.0, 0.25, -0.5, 1 / 3, -2 / 3), 60, 4),  # not integers: the loop's float sums
    ],
)
def test_best_of_many_gives_the_plain_loops_figures(
    values: tuple[float, ...], rows: int, k: int
) -> None:
    rng = random.Random(rows * 10 + k)
    candidates = [{f"r{i}": round(rng.choice(values), 12) for i in range(rows)} for _ in range(k)]
    for winner, seed in itertools.product(range(k), (0, 4)):
        got = maxstat.best_of_many(candidates, winner, seed=seed, n_resamples=400)
        assert got == _loop_best_of_many(candidates, winner, seed, 400)


def _loop_sign_flip(values: list[float], threshold: float, seed: int, n: int) -> float:
    rng = random.Random(seed)
    hits = 0
    for _ in range(n):
        bits = rng.getrandbits(len(values))
        flipped = math.fsum(v for j, v in enumerate(values) if bits >> j & 1)
        hits += abs(math.fsum(values) - 2.0 * flipped) >= threshold
    return (hits + 1) / (n + 1)


@pytest.mark.parametrize("size", [30, 64, 65, 233])
def test_the_monte_carlo_sign_flip_p_of_integer_diffs_is_the_loops(size: int) -> None:
    rng = random.Random(size)
    diffs = [float(rng.choice((-3, -1, 0, 1, 1, 2))) for _ in range(size)]
    nonzero = [d for d in diffs if d]
    threshold = abs(math.fsum(nonzero)) - 1e-12 * max(1.0, sum(abs(v) for v in nonzero))
    p, method = stats.sign_flip_p(diffs, seed=9, n_resamples=700)
    assert method == "monte-carlo sign-flip (700)"
    assert p == _loop_sign_flip(nonzero, threshold, 9, 700)


def _loop_best_of_many_seen(
    candidates: list[dict[str, float]],
    winner: int,
    seen: list[dict[str, float]],
    seed: int,
    n_resamples: int,
) -> maxstat.SelectionTest:
    """best_of_many's Monte-Carlo branch with candidates seen on part of the rows, as the plain
    loops compute it (the reference): each pattern's sign per row, every sum in turn."""
    keys = sorted(set.intersection(*(set(c) for c in candidates)))
    rates = [
        math.fsum(abs(d) for k, d in s.items() if k in keys) / len(s.keys() & set(keys))
        for s in seen
        if s.keys() & set(keys)
    ]
    imputed = any(rates)
    informative = [k for k in keys if imputed or any(c[k] != 0 for c in candidates)]
    where = {k: i for i, k in enumerate(informative)}
    partial = []
    for s in seen:
        known = [(where[k], d) for k, d in sorted(s.items()) if k in where]
        if known:
            partial.append((known, math.fsum(abs(d) for _, d in known) / len(known)))
    columns = [[c[k] for k in informative] for c in candidates]
    observed = math.fsum(columns[winner])
    assert len(informative) > maxstat.MAX_EXACT_ROWS
    rng = random.Random(seed)
    maxima = []
    for _ in range(n_resamples):
        signs = [rng.choice((1, -1)) for _ in informative]
        best = max(sum(s * d for s, d in zip(signs, col, strict=True)) for col in columns)
        if partial:
            total = sum(signs)
            for known, rate in partial:
                on = sum(signs[i] * d for i, d in known)
                rest = total - sum(signs[i] for i, _ in known)
                best = max(best, on + rate * rest)
        maxima.append(best)
    hits = sum(1 for m in maxima if m >= observed - 1e-9)
    ordered = sorted(maxima)
    bound = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)] / len(keys)
    k = len(candidates) + len(seen)
    named = f"{k} candidates, {len(seen)} seen on part of the rows, {n_resamples}"
    return maxstat.SelectionTest(
        k,
        len(keys),
        observed / len(keys),
        min(1.0, (hits + 1) / (n_resamples + 1)),
        max(0.0, bound),
        0.05,
        f"monte-carlo max-statistic sign-flip ({named})",
        len(seen),
    )


@pytest.mark.parametrize(
    ("values", "seen_values", "rows", "k", "n_seen"),
    [
        ((-1.0, 0.0, 0.0, 1.0), (-1.0, 0.0, 1.0), 40, 1, 1),
        ((-1.0, 0.0, 0.0, 1.0), (-1.0, 0.0, 1.0, 1.0), 120, 4, 6),
        ((-1.0, 0.0, 0.0, 0.0, 1.0), (0.0, 1.0), 300, 3, 12),
        ((-2.0, -1.0, 0.0, 3.0), (-2.0, 0.0, 1.0), 57, 2, 5),
        ((-1.0, 0.0, 1.0), (0.0,), 50, 2, 3),  # tie where scored: rate 0
        ((0.0, 0.25, -0.5, 1 / 3), (-1.0, 0.0, 1.0), 60, 2, 3),  # the loops' float sums
        ((-1.0, 0.0, 1.0), (0.0, 0.5, -0.25, 1 / 3), 60, 2, 3),  # the loops' float sums
    ],
)
def test_best_of_many_with_partly_seen_candidates_gives_the_plain_loops_figures(
    values: tuple[float, ...], seen_values: tuple[float, ...], rows: int, k: int, n_seen: int
) -> None:
    rng = random.Random(rows * 100 + k * 10 + n_seen)
    for trial in range(3):
        candidates = [
            {f"r{i}": round(rng.choice(values), 12) for i in range(rows)} for _ in range(k)
        ]
        seen = []
        for _ in range(n_seen):
            # scored on 8-40 rows, some of them outside the candidates' common rows
            picked = rng.sample(range(rows + 5), min(rows, rng.randint(8, 40)))
            seen.append({f"r{i}": round(rng.choice(seen_values), 12) for i in picked})
        for winner, seed in itertools.product(range(k), (0, trial + 5)):
            got = maxstat.best_of_many(candidates, winner, seed=seed, n_resamples=300, seen=seen)
            assert got == _loop_best_of_many_seen(candidates, winner, seen, seed, 300)


def _loop_sums(values: list[float], rng: random.Random, count: int) -> list[float]:
    n = len(values)
    return [sum(rng.choices(values, k=n)) for _ in range(count)]


@pytest.mark.parametrize(
    ("values", "sizes"),
    [
        ((-1.0, 0.0, 0.0, 1.0), (1, 2, 57, 255, 256, 257, 500, 1000, 2048)),
        ((0.0, 1.0), (3, 300)),
        ((-3.0, -1.0, 0.0, 2.0, 5.0, 7.0, 9.0, -8.0), (40, 511)),  # 7 distinct non-zero values
    ],
)
def test_bootstrap_sums_are_the_loops_sums(
    values: tuple[float, ...], sizes: tuple[int, ...]
) -> None:
    for size in sizes:
        rng = random.Random(size)
        drawn = [rng.choice(values) for _ in range(size)]
        for seed in (0, 1, 99):
            count = 37 if size > 600 else 301  # not a whole number of batches
            got = resample.bootstrap_sums(drawn, random.Random(seed), count)
            assert got == _loop_sums(drawn, random.Random(seed), count), (size, seed)


def test_bootstrap_sums_refuse_what_they_cannot_count() -> None:
    rng = random.Random(0)
    assert resample.bootstrap_sums([1.0, 0.5], rng, 10) is None
    assert resample.bootstrap_sums([1.0] * 2049, rng, 10) is None  # x * n leaves its field
    assert resample.bootstrap_sums([float(v) for v in range(10)], rng, 10) is None  # 9 values
    assert resample.bootstrap_sums([2.0**52, 1.0], rng, 10) is None  # sums not exact in floats
    assert resample.bootstrap_sums([], rng, 10) is None


class _Words(random.Random):
    """A generator handing out given 32-bit words: ``getrandbits`` and ``random`` take them in
    turn as CPython's do (``random()``: two words, ``a >> 5`` and ``b >> 6``)."""

    def __init__(self, words: list[int]) -> None:
        super().__init__(0)
        self.words, self.at = words, 0

    def getrandbits(self, k: int) -> int:
        assert k % 32 == 0
        taken = self.words[self.at : self.at + k // 32]
        self.at += k // 32
        return sum(word << 32 * i for i, word in enumerate(taken))

    def random(self) -> float:
        a, b = self.words[self.at : self.at + 2]
        self.at += 2
        return ((a >> 5) * 67108864.0 + (b >> 6)) * (1.0 / 9007199254740992.0)


def _edge_words(n: int, rng: random.Random) -> list[int]:
    """Draws whose index the first word alone does not give: just below each index boundary,
    carried over it by the second word or by the float product's rounding (or not)."""
    words = []
    for k in range(1, n):
        exact = -(-k * 2**53 // n) - 1  # x * n just below k * 2**53: rounds up in floats?
        for x in (exact, exact - 3, (-(-k * 2**27 // n) - 1) << 26 | (1 << 26) - 1):
            words += [(x >> 26) << 5 | rng.getrandbits(5), (x & (1 << 26) - 1) << 6]
    return words


@pytest.mark.parametrize("n", [3, 7, 57, 500])
def test_bootstrap_sums_take_the_draws_near_an_index_boundary_as_random_does(n: int) -> None:
    rng = random.Random(n)
    edges = _edge_words(n, rng)
    carried = 0
    for at in range(0, len(edges), 2):
        a, b = edges[at : at + 2]
        u = ((a >> 5) * 67108864.0 + (b >> 6)) * (1.0 / 9007199254740992.0)
        carried += math.floor(u * n) != (a >> 5) * n >> 27
    assert carried >= n - 1  # the first word alone would give other indexes
    count = 40
    need = 2 * n * count
    words = [rng.getrandbits(32) for _ in range(need)]
    for at in range(0, len(edges), 2):  # the edge draws spread over the resamples
        spot = 2 * rng.randrange(need // 2)
        words[spot : spot + 2] = edges[at : at + 2]
    values = [float(rng.choice((-1, 0, 1))) for _ in range(n)]
    assert resample.bootstrap_sums(values, _Words(words), count) == _loop_sums(
        values, _Words(words), count
    )


@pytest.mark.parametrize("seed", [0, 3])
def test_the_bootstrap_ci_of_integer_diffs_is_the_loops(seed: int) -> None:
    rng = random.Random(seed)
    diffs = [float(rng.choice((-1, 0, 0, 1, 1))) for _ in range(300)]
    loop = random.Random(seed)
    means = sorted(sum(loop.choices(diffs, k=300)) / 300 for _ in range(2_000))
    expected = (stats._quantile(means, 0.025), stats._quantile(means, 0.975))
    assert stats.bootstrap_ci(diffs, seed=seed, n_bootstrap=2_000) == expected
