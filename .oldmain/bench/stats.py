"""Cost of the paired significance tests (reflex.checks.stats), exact and Monte-Carlo.

    python bench/stats.py [--repeats 3]

Prints the best of ``--repeats`` wall times (a busy machine only ever adds time) for the exact
sign-flip test up to ``MAX_EXACT`` = 20 non-zero differences (2**20 sign patterns), the
Monte-Carlo sign-flip test above it, and a whole ``paired_test`` (sign-flip, bootstrap CI,
Wilcoxon, effect size) at typical test-split sizes. It replaces a unit test that asserted n = 20
in < 0.5 s (a wall-clock bound a loaded machine can break); tests/test_stats.py checks the values.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from functools import partial

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
    for rows in (50, 200, 1000):
        rng = random.Random(rows)
        baseline = {f"r{i}": float(rng.random() < 0.5) for i in range(rows)}
        final = {k: float(rng.random() < 0.6) for k in baseline}
        cost = best_ms(partial(paired_test, baseline, final), args.repeats)
        print(f"{f'paired_test, {rows} rows (0/1 scores)':<48}{'':<32}{cost:>10.1f}")


if __name__ == "__main__":
    main()
