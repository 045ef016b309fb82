"""The README quick start on the embedded model: wall time, calls, baseline -> final.

    python bench/quickstart.py [--run-dir DIR] [--local-workers K]

``--local-workers K`` (default 0: one per core) compares the embedded model's contexts: the
calls and the scores must be the same at every K, the wall time is what changes (read it with
the load average printed before and after: the machines are shared).

Prints figures; it asserts nothing (machines differ). Uses a fresh run directory so no cached
answer is reused unless --run-dir points at an earlier one.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from reflex import PromptOptimizer

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "home_assistant_intents"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--run-dir", default=None)
    parser.add_argument("--local-workers", type=int, default=0)
    args = parser.parse_args()
    run_dir = args.run_dir or tempfile.mkdtemp(prefix="reflex-quickstart-")
    load = os.getloadavg()[0]
    started = time.perf_counter()
    result = (
        PromptOptimizer()
        .set_dataset(EXAMPLE / "quickstart.jsonl")
        .add_provider("local/qwen2.5-coder-0.5b")
        .add_metric("exact_match")
        .set_strategy("auto")
        .configure(max_tokens=16)
        .set_local_workers(args.local_workers)
        .set_run_dir(run_dir)
        .run(EXAMPLE / "prompt.md")
    )
    wall = time.perf_counter() - started
    task = result.usage["task"]
    assert result.baseline is not None and result.final is not None
    print(f"wall time        {wall:.1f} s  (local workers {args.local_workers or 'default'})")
    print(f"load average     {load:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"model calls      {task['calls']} (cache hits {task['cache_hits']})")
    print(f"tokens           {task['tokens']:,}")
    print(f"per call         {wall / max(task['calls'], 1):.2f} s")
    print(f"splits           {result.split_sizes}")
    print(f"baseline (test)  {result.baseline.mean_score:.3f}")
    print(f"final (test)     {result.final.mean_score:.3f}")
    print(f"p-value          {result.p_value}")
    print(f"iterations       {len(result.iterations)}  ({result.stop_reason})")
    digest = hashlib.sha256(result.best_prompt.encode("utf-8")).hexdigest()[:12]
    print(f"best prompt      sha256 {digest}")


if __name__ == "__main__":
    main()
