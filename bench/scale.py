"""Target 6: load + split a 100,000-row JSONL in <= 2 s with peak RSS <= 400 MB, and one
minibatch iteration whose cost does not grow with the dataset (1k, 10k, 100k rows).

    python bench/scale.py [--sizes 1000 10000 100000] [--rows FILE]
    python bench/scale.py --router [--ray] [--rate R --calls N]   # beyond one machine

``--router``/``--ray``: the figures of docs/scaling.md instead (bench/scale_out.py: a LiteLLM
Router over three rate-limited deployments, two processes sharing limits through Redis, and
with ``--ray`` a 12-cell compare grid on a local Ray cluster vs in one process).

Load + split runs in a fresh child process, so its peak RSS is the whole cost of a 100k dataset.
An iteration = draw a seeded train minibatch (batch_size 8) + evaluate a new prompt on it through
the full Session against a zero-latency endpoint (median of 5).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import Row, emit, endpoint, make_session, rows_for, warm_up, write_jsonl

CHILD = """
import json, resource, sys, time
started = time.perf_counter()
from reflex.data.dataset import load_dataset
from reflex.data.splits import split_dataset
split = split_dataset(load_dataset(sys.argv[1]), train=0.6, val=0.2, seed=0)
wall = time.perf_counter() - started
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall": wall, "rss": rss, "pandas": "pandas" in sys.modules}))
"""


def load_and_split(path: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True
    )
    return dict(json.loads(done.stdout))


def iteration_cost(url: str, path: Path, repeats: int = 5) -> float:
    import random

    from reflex.data.dataset import load_dataset
    from reflex.data.splits import split_dataset

    split = split_dataset(load_dataset(path), train=0.6, val=0.2, seed=0)
    session = make_session(url, 8)
    rng = random.Random(0)
    times = []
    for r in range(repeats):
        started = time.perf_counter()
        batch = rng.sample(list(split.train), 8)
        session.evaluate(f"Prompt {path.stem} {r}.", batch, f"train:it{r}")
        times.append(time.perf_counter() - started)
    session.close()
    return statistics.median(times)


def main() -> None:
    if {"--router", "--ray"} & set(sys.argv[1:]):
        from scale_out import main as scale_out

        rest = [a for a in sys.argv[1:] if a != "--router"]
        scale_out(rest)
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--rows", default=None)
    args = parser.parse_args()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp, endpoint(0.0) as url:
        warm_up(url)
        costs = {}
        for size in args.sizes:
            path = write_jsonl(rows_for(size, f"s{size}_"), Path(tmp) / f"rows{size}.jsonl")
            loaded = load_and_split(path)
            costs[size] = iteration_cost(url, path)
            print(
                f"{size:>7} rows: load+split {loaded['wall']:.2f}s, peak RSS "
                f"{loaded['rss']:.0f} MB, pandas imported: {loaded['pandas']}, "
                f"one minibatch iteration {costs[size] * 1e3:.1f} ms",
                flush=True,
            )
            if size == max(args.sizes):
                rows.append(
                    Row(
                        "6",
                        f"load+split {size:,} rows (JSONL)",
                        f"{loaded['wall']:.2f}s",
                        "<= 2.00s",
                        loaded["wall"] <= 2.0,
                    )
                )
                rows.append(
                    Row(
                        "6",
                        f"peak RSS, {size:,} rows",
                        f"{loaded['rss']:.0f} MB",
                        "<= 400 MB",
                        loaded["rss"] <= 400,
                    )
                )
        smallest, largest = min(costs), max(costs)
        growth = costs[largest] / costs[smallest]
        shown = " / ".join(f"{costs[s] * 1e3:.0f}" for s in sorted(costs))
        rows.append(
            Row(
                "6",
                f"minibatch iteration ms at {'/'.join(map(str, sorted(costs)))}",
                f"{shown} ({growth:.2f}x)",
                "flat (<~1.5x)",
                growth <= 1.5,
            )
        )
    emit(rows, args.rows)


if __name__ == "__main__":
    main()
