"""Cost of the paired significance tests (reflex.checks.stats), exact and Monte-Carlo.

    python bench/stats.py [--repeats 3]

Prints the best of ``--repeats`` wall times (a busy machine only ever adds time) for the exact
sign-flip test up to ``MAX_EXACT`` = 20 non-zero differences (2**20 sign patterns), the
Monte-Carlo sign-flip test above it, a whole ``paired_test`` (sign-flip, bootstrap CI,
Wilcoxon, effect size) at typical test-split sizes with its CI, and the best-of-many correction
(``reflex.checks.maxstat.best_of_many``) at 500 val rows with 8 candidates scored on every row
and 0, 20 or 40 seen on 8-40 rows only (race drops, trials), 0/1 scores, with its p and bound
(run it with ``PYTHONPATH=<another checkout>`` to compare: the figures must be equal). It
replaces a unit test that asserted n = 20 in < 0.5 s (a wall-clock bound a loaded machine can
break); tests/test_stats.py checks the values.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from functools import partial

from reflex.checks.maxstat import SelectionTest, best_of_many
from reflex.checks.stats import MAX_EXACT, paired_test, sign_flip_p


def gaussian_diffs(n: int, seed: int = 7) -> list[float]:
    """Distinct 3-decimal differences (few ties: the exact test's hardest input)."""
    rng = random.Random(seed)
    return [round(rng.gauss(0.3, 1.0), 3) for _ in range(n)]


def best_ms(func: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return 1e3 * min(times)


def selection_input(
    rows: int, full: int, seen: int, seed: int = 11
) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    """``full`` candidates' 0/1-score differences on ``rows`` val rows and ``seen`` more on
    8-40 of those rows each."""
    rng = random.Random(seed)
    base = [float(rng.random() < 0.5) for _ in range(rows)]

    def diffs(picked: list[int], rate: float) -> dict[str, float]:
        return {f"r{i}": float(rng.random() < rate) - base[i] for i in picked}

    candidates = [diffs(list(range(rows)), 0.5 + 0.01 * j) for j in range(full)]
    partial = [diffs(rng.sample(range(rows), rng.randint(8, 40)), 0.45) for _ in range(seen)]
    return candidates, partial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'measure':<48}{'method':<32}{'best ms':>10}")
    for n in (12, 16, MAX_EXACT, 25, 100):
        diffs = gaussian_diffs(n)
        _, method = sign_flip_p(diffs)
        cost = best_ms(partial(sign_flip_p, diffs), args.repeats)
        print(f"{f'sign_flip_p, n = {n}':<48}{method:<32}{cost:>10.1f}")
    for rows in (50, 200, 500, 1000):
        rng = random.Random(rows)
        baseline = {f"r{i}": float(rng.random() < 0.5) for i in range(rows)}
        final = {k: float(rng.random() < 0.6) for k in baseline}
        test = paired_test(baseline, final)
        cost = best_ms(partial(paired_test, baseline, final), args.repeats)
        ci = f"ci=({test.ci_low!r}, {test.ci_high!r})"
        print(f"{f'paired_test, {rows} rows (0/1 scores)':<48}{ci:<32}{cost:>10.1f}")
    for seen in (0, 20, 40):
        candidates, some = selection_input(500, 8, seen)
        run = selection_call(candidates, some)
        test = run()
        cost = best_ms(run, args.repeats)
        name = f"best_of_many, 500 rows, 8 + {seen} seen"
        figures = f"p={test.p!r} bound={test.bound!r}"
        print(f"{name:<48}{figures:<32}{cost:>10.1f}")


def selection_call(
    candidates: list[dict[str, float]], seen: list[dict[str, float]]
) -> Callable[[], SelectionTest]:
    winner = max(range(len(candidates)), key=lambda j: sum(candidates[j].values()))
    return partial(best_of_many, candidates, winner, seed=3, seen=seen)


if __name__ == "__main__":
    main()
