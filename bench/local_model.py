"""Benchmark the embedded model: calls/s and CPU-s per call with K contexts, side by side.

Run: ``python bench/local_model.py`` (needs ``aevyra-reflex[local]``). The same ``--calls``
short classification calls (one fixed instruction, a different review each, ``max_tokens`` 8,
as an evaluation sends them) go through ``ProviderClient`` and LiteLLM with the cache off, once
per configuration:

- ``K=1``: one context (``--local-workers 1``, the behaviour before issue 34);
- ``K=2`` ... (``--k 1,2,4``): K contexts of one thread each, in threads of this process;
- ``batch N=4``, ``N=8`` (``--batch 4,8``): N sequences decoded together in one context
  (``--local-batch N``; not bit-identical to serial: the count of identical answers says how
  far);
- ``--processes``: also K=2 contexts in two processes (llama-cpp-python called directly, no
  LiteLLM), the alternative to threads: if threads were held back by the GIL, this would be
  faster than K=2 in threads.

Each line prints calls/s, CPU-s per call (this process and its children, all threads), the ratio
to K=1 and how many answers are identical to K=1's, with the load average (``uptime``) before and
after: the machines are shared, so read ratios measured in the same run. ``local_profile.py``
prints the per-model summary (load time, latency, tokens/s; SmolLM2 too when installed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("REFLEX_LOCAL_THREADS", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from reflex.models import local
from reflex.models.client import ClientSettings, ModelSpec, ProviderClient, load_litellm
from reflex.models.runner import LoopRunner

MODEL = "local/qwen2.5-coder-0.5b"
INSTRUCTION = (
    "Classify the sentiment of the movie review. Answer with exactly one word: "
    "positive or negative."
)
GOOD = ["A wonderful film", "Superb acting", "A delightful surprise", "Beautifully shot"]
BAD = ["Dull and far too long", "A terrible script", "I was bored stiff", "The plot made no sense"]
Messages = list[dict[str, str]]
# A configuration's timed part: its answers and, for work in other processes, its CPU-s.
Run = Callable[[], tuple[list[str], float | None]]


def workload(n: int) -> list[Messages]:
    """``n`` calls: the fixed instruction, then a different review each."""
    reviews = [
        f"{(GOOD if i % 2 == 0 else BAD)[(i // 2) % 4]}, review number {i}." for i in range(n)
    ]
    return [
        [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": r}]
        for r in reviews
    ]


def cpu_seconds() -> float:
    """CPU time of this process (all threads) and of its waited-for children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def through_client(k: int, calls: list[Messages], batch: int = 0) -> Run:
    """The product path: K contexts, or a batch of N (warmed up before timing), every call
    gathered at once."""
    settings = ClientSettings(max_workers=max(8, batch), local_workers=k, local_batch=batch)
    client = ProviderClient(settings, cache=None)
    spec = ModelSpec(MODEL, max_tokens=8)

    async def gather(batch: list[Messages]) -> list[str]:
        return [c.text for c in await asyncio.gather(*(client.complete(spec, m) for m in batch))]

    warm = [
        [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": f"Hi {i}."}]
        for i in range(max(k, batch))
    ]
    LoopRunner.shared().run(gather(warm))
    return lambda: (LoopRunner.shared().run(gather(calls)), None)


WORKER = """
import json, sys, time, resource
import llama_cpp
path, calls = sys.argv[1], json.loads(sys.stdin.readline())
llm = llama_cpp.Llama(model_path=path, n_ctx=2048, n_threads=1, n_threads_batch=1, seed=0,
                      verbose=False)
def ask(m):
    out = llm.create_chat_completion(messages=m, temperature=0.0, max_tokens=8, seed=0)
    return out["choices"][0]["message"]["content"]
ask(calls[0])
print("ready", flush=True)
sys.stdin.readline()
started = time.process_time()
answers = [ask(m) for m in calls]
print(json.dumps({"answers": answers, "cpu": time.process_time() - started}), flush=True)
"""


def in_processes(k: int, calls: list[Messages]) -> Run:
    """K processes, each one context over every K-th call (loaded and warmed before timing)."""
    path = str(local.qwen_model_path())
    workers = []
    for i in range(k):
        process = subprocess.Popen(
            [sys.executable, "-c", WORKER, path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(calls[i::k]) + "\n")
        process.stdin.flush()
        workers.append(process)
    for process in workers:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"

    def run() -> tuple[list[str], float]:
        for process in workers:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        shares = []
        for process in workers:
            assert process.stdout is not None
            shares.append(json.loads(process.stdout.readline()))
            process.wait()
        answers = [""] * len(calls)
        for i, share in enumerate(shares):
            answers[i::k] = share["answers"]
        return answers, sum(share["cpu"] for share in shares)

    return run


def measure(label: str, run: Run, n: int, base: dict[str, object]) -> None:
    load = os.getloadavg()[0]
    cpu, started = cpu_seconds(), time.perf_counter()
    answers, elsewhere = run()
    wall = time.perf_counter() - started
    cpu = cpu_seconds() - cpu if elsewhere is None else elsewhere
    rate = n / wall
    base.setdefault("rate", rate)
    reference = base.setdefault("answers", answers)
    assert isinstance(reference, list)
    same = sum(a == b for a, b in zip(answers, reference, strict=True))
    ratio = rate / float(str(base["rate"]))
    print(
        f"{label:<24} {rate:6.2f} calls/s  {cpu / n:6.3f} CPU-s/call  {ratio:5.2f}x  "
        f"identical to K=1 {same}/{n}  load {load:.1f} -> {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--k", default="1,2", help="comma-separated K values (1 first)")
    parser.add_argument("--batch", default="4,8", help="batch sizes N (--local-batch); '' for none")
    parser.add_argument("--processes", action="store_true", help="also K=2 in two processes")
    args = parser.parse_args()
    local.register_local_provider()
    load_litellm()
    calls = workload(args.calls)
    print(f"{args.calls} calls, {MODEL}, 1 thread per context, cores {os.cpu_count()}")
    base: dict[str, object] = {}
    for k in [int(v) for v in args.k.split(",")]:
        measure(f"K={k} (threads)", through_client(k, calls), len(calls), base)
    for n in [int(v) for v in args.batch.split(",") if v]:
        measure(f"batch N={n}", through_client(1, calls, batch=n), len(calls), base)
    if args.processes:
        measure("K=2 (processes)", in_processes(2, calls), len(calls), base)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
