"""Target 6: load + split a 100,000-row JSONL in <= 2 s with peak RSS <= 400 MB, and one
minibatch iteration whose cost does not grow with the dataset (1k, 10k, 100k rows).

    python bench/scale.py [--sizes 1000 10000 100000] [--repeats 3] [--peer-python PY] [--rows FILE]
    python bench/scale.py [--router] [--ray] [--rate R --calls N]   # beyond one machine

``--router``/``--ray``: the figures of docs/scaling.md instead (bench/scale_out.py): ``--router``
a LiteLLM Router over three rate-limited deployments and two processes sharing limits through
Redis; ``--ray`` a 12-cell compare grid (2 strategies x 2 seeds x 3 datasets) on a local Ray
cluster vs in one process (``--cpus N --grid-latency S``).

Load + split runs in a fresh child process, so its peak RSS is the whole cost of a 100k dataset.
An iteration = draw a seeded train minibatch (batch_size 8) + evaluate a new prompt on it through
the full Session against a zero-latency endpoint (median of 5).

Issue 21: the same load + split of the largest file through aevyra-reflex 0.2.0 (its
``Dataset.from_jsonl`` and 3-way split, in ``--peer-python``, default /tmp/peer-venv/bin/python),
interleaved with ours, ``--repeats`` times; medians of wall time and peak RSS.
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
usage = resource.getrusage(resource.RUSAGE_SELF)
rss, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
print(json.dumps({"wall": wall, "rss": rss, "cpu": cpu, "pandas": "pandas" in sys.modules}))
"""


PEER_CHILD = """
import json, resource, sys, time
started = time.perf_counter()
from aevyra_verdict.dataset import Dataset
from aevyra_reflex.optimizer import PromptOptimizer
data = Dataset.from_jsonl(sys.argv[1], input_field="input", output_field="ideal")
split = PromptOptimizer._split_dataset_3way(data, 0.8, 0.2, seed=0)
wall = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_SELF)
rss, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
print(json.dumps({"wall": wall, "rss": rss, "cpu": cpu, "pandas": "pandas" in sys.modules}))
"""


def load_and_split(
    path: Path, python: str = sys.executable, child: str = CHILD
) -> dict[str, float]:
    # cwd: not this checkout, whose aevyra_reflex shim would shadow the peer's package.
    done = subprocess.run(
        [python, "-c", child, str(path.resolve())],
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    return dict(json.loads(done.stdout))


def versus_peer(path: Path, python: str, repeats: int) -> list[Row]:
    """Ours and 0.2.0's load + split of ``path``, interleaved; medians."""
    ours, peer = [], []
    for _ in range(repeats):
        ours.append(load_and_split(path))
        peer.append(load_and_split(path, python, PEER_CHILD))
    med = {
        (who, key): statistics.median(run[key] for run in runs)
        for who, runs in (("ours", ours), ("peer", peer))
        for key in ("wall", "rss", "cpu")
    }
    print(
        f"load+split {path.stem}: ours {med['ours', 'wall']:.2f}s / {med['ours', 'rss']:.0f} MB, "
        f"0.2.0 {med['peer', 'wall']:.2f}s / {med['peer', 'rss']:.0f} MB; process CPU ours "
        f"{med['ours', 'cpu']:.2f}s, 0.2.0 {med['peer', 'cpu']:.2f}s (median of {repeats})",
        flush=True,
    )
    return [
        Row(
            "21",
            f"load+split {path.stem}: ours / 0.2.0 wall",
            f"{med['ours', 'wall']:.2f}/{med['peer', 'wall']:.2f}s",
            "ours <= peer",
            med["ours", "wall"] <= med["peer", "wall"],
        ),
        Row(
            "21",
            f"load+split {path.stem}: ours / 0.2.0 peak RSS",
            f"{med['ours', 'rss']:.0f}/{med['peer', 'rss']:.0f} MB",
            "ours <= peer",
            med["ours", "rss"] <= med["peer", "rss"],
        ),
        Row(
            "21",
            f"load+split {path.stem}: ours / 0.2.0 process CPU",
            f"{med['ours', 'cpu']:.2f}/{med['peer', 'cpu']:.2f}s",
            "ours <= peer",
            med["ours", "cpu"] <= med["peer", "cpu"],
        ),
    ]


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


def only_peer(size: int, python: str, repeats: int, rows: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write_jsonl(rows_for(size, f"s{size}_"), Path(tmp) / f"rows{size}.jsonl")
        emit(versus_peer(path, python, repeats), rows)


def size_rows(size: int, loaded: dict[str, float]) -> list[Row]:
    """The load+split and peak-RSS targets at the largest size."""
    wall, rss = loaded["wall"], loaded["rss"]
    return [
        Row("6", f"load+split {size:,} rows (JSONL)", f"{wall:.2f}s", "<= 2.00s", wall <= 2.0),
        Row("6", f"peak RSS, {size:,} rows", f"{rss:.0f} MB", "<= 400 MB", rss <= 400),
    ]


def main() -> None:
    if {"--router", "--ray"} & set(sys.argv[1:]):
        from scale_out import main as scale_out

        scale_out(sys.argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peer-python", default="/tmp/peer-venv/bin/python")
    parser.add_argument("--only-peer", action="store_true", help="just the 0.2.0 comparison")
    parser.add_argument("--rows", default=None)
    args = parser.parse_args()
    if args.only_peer:
        only_peer(max(args.sizes), args.peer_python, args.repeats, args.rows)
        return
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
            if size == max(args.sizes) and Path(args.peer_python).exists():
                rows += versus_peer(path, args.peer_python, args.repeats)
            if size == max(args.sizes):
                rows += size_rows(size, loaded)
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
