"""Issue 34, item 3: a whole ``iterative`` run against remote latency, next to its limit.

    python bench/overlap.py [--latency 0.1] [--concurrency 64] [--rows 2500] [--iterations 12]
        [--reps 2] [--timeline] [--against DIR]

The same optimization (the builder, a full run: preflight, baseline test, initial val, the
iterations, final test) runs against two endpoints in child processes, one answering at once
(T0: the client's own floor) and one after ``--latency`` seconds, interleaved ``--reps`` times.
It prints N (the requests the endpoint received: task and reasoning), L, C, T0, the wall time T,
the limit max(N*L/C, T0) and T / limit; the load average before and after.

``--timeline`` also prints where the time goes in the last latency run: the requests in flight
per 10 ms step (from the endpoint's own arrival and answer times), how long the pool was full,
partly full and empty, and each phase (an evaluation, a reasoning call) with its calls, its
wall time and the time before its first request / after its last answer. The serial part of
the algorithm is reported as the critical path: per iteration, the calls that must wait for the
previous ones (a minibatch evaluation before the reasoning call, the reasoning call, the
revision's minibatch evaluation) each take at least one L, whatever C is.

``--against DIR`` measures side by side: each rep runs this script twice in child processes,
first with ``PYTHONPATH=DIR`` (a checkout of another commit, e.g. ``git archive main | tar -x -C
DIR``: its ``reflex`` package is imported instead of this one) and then with this checkout,
alternating, so both meet the same load.

The task model answers a row right when the row's number mod 10 is below the prompt's "level";
the reasoner proposes level + 1 or level - 1 (by a hash of its brief), so about half the
revisions are adopted and measured on val, as in a real run. Every prompt is new: every
evaluation is paid, nothing comes from the cache.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-none")

ROOT = Path(__file__).resolve().parents[1]
_LEVEL = re.compile(r"level (\d+)")


def responder(request: Any) -> str:
    """The task model and the reasoner, deterministic."""
    if request.model == "reasoner":
        found = _LEVEL.search(request.user)
        level = int(found.group(1)) if found else 1
        tag = hashlib.sha256(request.user.encode()).hexdigest()[:8]
        step = 1 if int(tag, 16) % 2 else -1
        prompt = f"Answer with the label. Accuracy level {max(0, level + step)} ({tag})."
        return f"<diagnosis>misses</diagnosis><edit>level {step:+d}</edit><prompt>{prompt}</prompt>"
    found = _LEVEL.search(request.system)
    level = int(found.group(1)) if found else 1
    words = request.user.split()
    row, label = int(words[1]), words[-1]
    return label if row % 10 < level else f"The answer is {label}"


def serve(latency: float) -> None:
    """The child process: an endpoint with ``responder`` that also keeps every request's times."""
    from reflex.testing.endpoint import EndpointServer
    from reflex.testing.http import Request, send

    class TracingServer(EndpointServer):
        trace: ClassVar[list[tuple[float, float, bool]]] = []

        async def _route(self, request: Request, writer: asyncio.StreamWriter) -> bool:
            if request.path.rstrip("/").endswith("/trace"):
                trace, TracingServer.trace = TracingServer.trace, []
                return await send(writer, 200, {"trace": trace})
            if request.method != "POST":
                return await super()._route(request, writer)
            arrival = time.monotonic()
            try:
                return await super()._route(request, writer)
            finally:
                reasoning = b'"reasoner"' in request.body
                TracingServer.trace.append((arrival, time.monotonic(), reasoning))

    async def forever() -> None:
        server = TracingServer(latency=latency, responder=responder)
        port = await server.start("127.0.0.1", 0)
        sys.stdout.write(f"listening on http://127.0.0.1:{port}/v1\n")
        sys.stdout.flush()
        await asyncio.Event().wait()

    asyncio.run(forever())


@contextmanager
def endpoint(latency: float) -> Iterator[str]:
    command = [sys.executable, __file__, "--serve", "--latency", str(latency)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().split()[-1]
    finally:
        process.terminate()
        process.wait(timeout=10)


def fetch_trace(url: str) -> list[tuple[float, float, bool]]:
    import urllib.request

    with urllib.request.urlopen(f"{url}/trace") as response:
        return [tuple(row) for row in json.load(response)["trace"]]  # type: ignore[misc]


class Phases:
    """A callback: each evaluation's label and its start/end on the monotonic clock."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, float, float]] = []
        self._open: dict[str, float] = {}
        self.run = (0.0, 0.0)  # the builder's run(): its call and its return

    def on_evaluation_start(self, label: Any, total: int) -> None:
        self._open[str(label)] = time.monotonic()

    def on_evaluation_end(self, label: Any, snapshot: Any) -> None:
        self.spans.append((str(label), self._open.pop(str(label)), time.monotonic()))


def records(n: int) -> list[dict[str, str]]:
    return [
        {"id": f"r{i}", "input": f"row {i} label{i % 3}", "ideal": f"label{i % 3}"}
        for i in range(n)
    ]


def optimize(
    url: str, args: argparse.Namespace, phases: Phases | None = None, run_dir: str | None = None
) -> tuple[float, Any]:
    """One whole run; (wall seconds from the builder's run() to its result, the result)."""
    from reflex import PromptOptimizer

    opt = (
        PromptOptimizer()
        .set_dataset(records(args.rows))
        .add_provider("openai/task", api_base=url)
        .add_metric("exact_match")
        .set_strategy(getattr(args, "strategy", "iterative"))
        .set_reasoning_model("openai/reasoner", base_url=url)
        .configure(
            max_iterations=args.iterations,
            early_stopping_patience=None,
            max_workers=args.concurrency,
            run_dir=run_dir or tempfile.mkdtemp(prefix="reflex-overlap-"),
        )
    )
    started, clock = time.perf_counter(), time.monotonic()
    result = opt.run(
        "Answer with the label. Accuracy level 2.", callbacks=[phases] if phases else []
    )
    if phases is not None:
        phases.run = (clock, time.monotonic())
    return time.perf_counter() - started, result


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def pool_profile(trace: list[tuple[float, float, bool]], c: int, step: float = 0.01) -> str:
    """Seconds with the pool full, partly full, empty (10 ms steps between first and last)."""
    start = min(a for a, _, _ in trace)
    end = max(d for _, d, _ in trace)
    steps = int((end - start) / step) + 1
    flight = [0] * (steps + 1)
    for arrival, done, _ in trace:  # in flight at a step's midpoint
        first = int((arrival - start) / step + 0.5)
        last = int((done - start) / step + 0.5)
        for i in range(first, last):
            flight[i] += 1
    full = sum(1 for f in flight if f >= c) * step
    empty = sum(1 for f in flight if f == 0) * step
    partly = steps * step - full - empty
    mean = sum(flight) / max(1, steps)
    return (
        f"endpoint window {end - start:.2f}s: pool full (>= {c}) {full:.2f}s, partly "
        f"{partly:.2f}s, empty {empty:.2f}s; mean in flight {mean:.1f}"
    )


def _span_calls(trace: list[tuple[float, float, bool]], begin: float, end: float) -> list[float]:
    return [a for a, _, reasoning in trace if not reasoning and begin <= a <= end]


def timeline(
    trace: list[tuple[float, float, bool]], phases: Phases, latency: float, c: int
) -> None:
    """Each phase: calls, wall, before its first request, after its last answer; then the
    critical path: the serial round trips and the rounds of C calls the big evaluations need."""
    events = [*phases.spans, *(("reasoning", a, d) for a, d, r in trace if r)]
    events.sort(key=lambda e: e[1])
    origin = events[0][1]
    done = {a: d for a, d, _ in trace}
    pre_total = post_total = 0.0
    print(f"{'phase':<34}{'start':>8}{'wall':>8}{'calls':>7}{'pre':>8}{'post':>8}")
    for label, begin, end in events:
        inside = _span_calls(trace, begin, end) if label != "reasoning" else []
        head = f"{label:<34}{begin - origin:8.3f}{end - begin:8.3f}"
        if not inside:
            print(f"{head}{int(label == 'reasoning'):>7}")
            continue
        pre, post = min(inside) - begin, end - max(done[a] for a in inside)
        pre_total, post_total = pre_total + pre, post_total + post
        print(f"{head}{len(inside):>7}{pre:8.3f}{post:8.3f}")
    print(f"in evaluations: {pre_total:.2f}s before the first request, {post_total:.2f}s after")
    first, last = min(a for a, _, _ in trace), max(d for _, d, _ in trace)
    final = next((b for label, b, _ in phases.spans if label == "test:final"), last)
    ends = [e for label, _, e in phases.spans if label != "test:final"]
    before_final = final - max([*ends, *(d for _, d, r in trace if r and d < final)])
    print(
        f"outside the endpoint window: {first - phases.run[0]:.2f}s from run() to the first "
        f"request, {phases.run[1] - last:.2f}s from the last answer to the result; "
        f"{before_final:.2f}s between the last search phase and the final test"
    )
    big = [(b, e) for label, b, e in phases.spans if not label.startswith("train")]
    rounds = sum(-(-len(_span_calls(trace, b, e)) // c) for b, e in big)
    walls = sum(e - b for b, e in big)
    print(
        f"val/test evaluations: {len(big)}, {walls:.2f}s in all; {rounds} rounds of C calls "
        f"= {rounds * latency:.2f}s of latency"
    )
    reasoning = sum(1 for _, _, r in trace if r)
    small = sum(1 for label, _, _ in phases.spans if label.startswith("train"))
    serial = (reasoning + small) * latency
    print(
        f"serial round trips: {reasoning} reasoning calls + {small} minibatch evaluations "
        f"= {serial:.2f}s; critical path at infinite CPU {serial + rounds * latency:.2f}s"
    )


def alternate(args: argparse.Namespace) -> None:
    """``--against``: each rep, the other checkout's code, then this one's (child processes)."""
    base = str(Path(args.against).resolve())
    script = str(Path(__file__).resolve())
    flags = [f"--{k}={getattr(args, k)}" for k in ("latency", "concurrency", "rows", "iterations")]
    flags += ["--reps=1", *(["--timeline"] if args.timeline else [])]
    for rep in range(args.reps):
        for name, path in (("against", base), ("this", None)):
            env = dict(os.environ)
            env.pop("PYTHONPATH", None)
            if path is not None:
                env["PYTHONPATH"] = path
            print(f"=== {name} rep {rep + 1} ({path or ROOT})", flush=True)
            subprocess.run([sys.executable, script, *flags], env=env, cwd=path or ROOT, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rows", type=int, default=2500)
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--timeline", action="store_true")
    parser.add_argument("--dump", default=None, help="with --timeline: the trace as JSON here")
    parser.add_argument("--against", default=None, help="a checkout to alternate with this one")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.latency)
        return
    if args.against:
        alternate(args)
        return
    print(f"load before {load()}", flush=True)
    with endpoint(0.0) as fast, endpoint(args.latency) as slow:
        optimize(fast, argparse.Namespace(**{**vars(args), "rows": 40, "iterations": 1}))
        fetch_trace(fast)
        for rep in range(args.reps):
            t0, _ = optimize(fast, args)
            n0 = len(fetch_trace(fast))
            phases = Phases() if args.timeline and rep == args.reps - 1 else None
            wall, result = optimize(slow, args, phases)
            trace = fetch_trace(slow)
            n = len(trace)
            limit = max(n * args.latency / args.concurrency, t0)
            print(
                f"rep {rep + 1}: N={n} (T0 run {n0}) L={args.latency:g}s C={args.concurrency} "
                f"T0={t0:.2f}s T={wall:.2f}s N*L/C={n * args.latency / args.concurrency:.2f}s "
                f"limit={limit:.2f}s ratio={wall / limit:.3f} final={result.final.mean_score:.3f} "
                f"load {load()}",
                flush=True,
            )
            if phases is not None:
                if args.dump:
                    Path(args.dump).write_text(json.dumps({"trace": trace, "spans": phases.spans}))
                print(pool_profile(trace, args.concurrency))
                timeline(trace, phases, args.latency, args.concurrency)


if __name__ == "__main__":
    main()
