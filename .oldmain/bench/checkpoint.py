"""Checkpoint cost: write time and size vs iterations and dataset rows; resume time of a 100-
iteration run killed near its end, against the same run uninterrupted.

    python bench/checkpoint.py [--quick] [--rows FILE]

Write cost: a real run (``iterative``, the deterministic fake model behind the LiteLLM boundary,
2 iterations, splits 0.9/0.05/0.05) on 100 / 1k / 10k rows writes its checkpoint.json through the
engine; that payload's iteration records are then repeated to 10 / 100 / 1000 iterations and
written with the engine's own writer (``RunStore.write_json``: atomic replace + fsync), mean and
p95 over repeated writes. Resume: the run is re-executed against the response cache (see
reflex.run.resume), so its cost is the replay of every cached call plus the unfinished tail.
``--quick``: 100 / 1k rows, a 30-iteration resume run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ROOT, Row, emit

sys.path.insert(0, str(ROOT))
START = "Classify the sentiment."


def rows(n: int) -> list[dict[str, str]]:
    words = ["great", "awful", "fine", "bad", "lovely", "poor"]
    labels = ["positive", "negative"]
    return [
        {"id": f"r{i:05d}", "input": f"review {i}: {words[i % 6]} film", "ideal": labels[i % 2]}
        for i in range(n)
    ]


PROPOSALS = itertools.count(1)


def answer(request: Any) -> str:
    """Task: right on every third row; reasoner: a prompt no earlier proposal made.

    Every candidate is new, so every iteration pays for its evaluations (a repeated proposal
    would be served from the cache). The process id keeps the resumed tail's proposals apart
    from the killed child's, whose counter the parent never sees.
    """
    if request.model == "fake/reasoner":
        n = f"{os.getpid()}.{next(PROPOSALS)}"
        return f"<edit>variant {n}</edit><prompt>{START} Variant {n}: answer in one word.</prompt>"
    index = int(request.user.split()[1].rstrip(":"))
    return "positive" if index % 3 == 0 else "I think it is positive."


def builder(data: list[dict[str, str]], run_dir: Path, iterations: int, **splits: float) -> Any:
    from reflex import PromptOptimizer

    return (
        PromptOptimizer()
        .set_dataset(data)
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(run_dir)
        .configure(max_iterations=iterations, early_stopping_patience=None, max_workers=8, **splits)
    )


def real_checkpoint(n_rows: int, tmp: Path) -> dict[str, Any]:
    """The checkpoint the engine wrote for a 2-iteration run on ``n_rows`` rows."""
    from reflex.testing import FakeModel

    FakeModel(answer).install()
    run_dir = tmp / f"rows{n_rows}"
    result = builder(rows(n_rows), run_dir, 2, train_split=0.9, val_split=0.05).run(START)
    path = Path(str(result.run_dir)) / "checkpoint.json"
    return dict(json.loads(path.read_text(encoding="utf-8")))


def grown(checkpoint: dict[str, Any], iterations: int) -> dict[str, Any]:
    """``checkpoint`` with its real iteration records repeated to ``iterations`` records."""
    real = checkpoint["iterations"]
    records = []
    for i in range(iterations):
        record = dict(real[i % len(real)])
        record["iteration"] = i + 1
        record["system_prompt"] = f"{record['system_prompt']} (candidate {i + 1})"
        records.append(record)
    return {**checkpoint, "iteration": iterations, "iterations": records}


def write_cost(payload: dict[str, Any], tmp: Path, repeats: int) -> tuple[float, float, int]:
    """Mean and p95 ms of ``repeats`` checkpoint writes, and the file's size in bytes."""
    from reflex.run.store import RunStore

    store = RunStore(tmp / "writes")
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        path = store.write_json("checkpoint.json", payload)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    return statistics.mean(times), p95, path.stat().st_size


def killed_run(run_dir: Path, iterations: int, kill_at: int) -> None:
    """The run in a forked child that SIGKILLs itself at fake-model call ``kill_at``."""
    from reflex.models.client import load_litellm
    from reflex.testing import FakeModel

    load_litellm()
    pid = os.fork()
    if pid == 0:

        def fault(request: Any, n: int) -> BaseException | None:
            if n >= kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return None

        FakeModel(answer, fault=fault).install()
        try:
            builder(rows(30), run_dir, iterations).run(START)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status), "the run finished before it was killed"


def resume_cost(iterations: int, tmp: Path) -> tuple[float, float, int, int]:
    """(uninterrupted s, resume s, calls of the full run, calls paid by the resume)."""
    from reflex.testing import FakeModel

    fake = FakeModel(answer).install()
    started = time.perf_counter()
    builder(rows(30), tmp / "full", iterations).run(START)
    full = time.perf_counter() - started
    total = len(fake.requests)
    killed_run(tmp / "killed", iterations, kill_at=int(total * 0.95))
    fake = FakeModel(answer).install()
    started = time.perf_counter()
    resumed = builder(rows(30), tmp / "killed", iterations).run(START, resume=True)
    took = time.perf_counter() - started
    assert resumed.completed and len(resumed.iterations) == iterations
    return full, took, total, len(fake.requests)


def write_table(sizes: list[int], tmp: Path) -> list[Row]:
    """Print write time and size for every rows x iterations; summary rows at 100 iterations."""
    out = []
    print(f"{'rows':>6} {'iterations':>10} {'mean ms':>8} {'p95 ms':>8} {'size KB':>8}")
    for n_rows in sizes:
        base = real_checkpoint(n_rows, tmp)
        for iterations in (10, 100, 1000):
            repeats = 10 if iterations == 1000 else 30
            mean, p95, size = write_cost(grown(base, iterations), tmp, repeats)
            print(f"{n_rows:>6} {iterations:>10} {mean:>8.2f} {p95:>8.2f} {size / 1024:>8.1f}")
            if iterations == 100:
                measure = f"checkpoint write, 100 iterations, {n_rows} rows"
                out.append(Row("ckpt", measure, f"{mean:.1f} ms / {size / 1024:.0f} KB"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rows", help="append summary rows (JSON lines) to this file")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    n = 30 if args.quick else 100
    with tempfile.TemporaryDirectory(prefix="reflex-ckpt-") as name:
        out = write_table([100, 1000] if args.quick else [100, 1000, 10000], Path(name))
        full, took, total, paid = resume_cost(n, Path(name))
    print(f"\n{n}-iteration run (30 rows), killed at 95% of its {total} calls:")
    print(f"  uninterrupted {full:.1f} s; resume {took:.1f} s ({took / full:.0%}), paid {paid}")
    measure = f"resume of a {n}-iteration run killed at 95%"
    out.append(Row("ckpt", measure, f"{took:.1f} s", f"full {full:.1f} s"))
    emit(out, args.rows)


if __name__ == "__main__":
    main()
