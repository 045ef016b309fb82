"""Issue 21: ours vs aevyra-reflex 0.2.0 (PyPI) at every concurrency, interleaved, medians.

    python -m venv /tmp/peer-venv && /tmp/peer-venv/bin/pip install 'aevyra-reflex[openai]==0.2.0'
    python bench/versus.py [--workers 1 8 64 256] [--n 2000] [--n-serial 100] [--reps 3]
                           [--client-processes 2] [--bare] [--peer PATH] [--rows FILE]

For each C (and each rep, interleaved): 0.2.0 runs ``optimize`` on N rows against the endpoint
(echo: the baseline already meets its threshold; we count the requests the endpoint received),
then we make exactly that many calls through a full Session (sqlite cache, ledger, budget,
events), both at L = 100 ms and against a zero-latency endpoint (T0, the client's CPU floor).
The peer's time is read at the endpoint, from its first request to its last answer, so its
start-up is not counted; ours is the wall time of ``Session.evaluate`` (which also includes the
time before the first request and after the last answer; the endpoint's window for ours is
printed too). Client CPU per call: ours is the process CPU of the evaluation at
L = 0; the peer's is its child CPU at L = 0 minus that of a 20-row run, over the extra calls.
Both come from N calls even where the timed row makes fewer (C = 1: one more pair of L = 0
runs), since over ~100 calls the peer's start-up noise exceeds what the calls cost.

Targets (issue 21): T_ours <= T_peer and T_ours <= 1.10 x max(N*L/C, T0_peer) on every row;
CPU per call <= the peer's. ``--bare`` adds a bare ``litellm.acompletion`` loop (LiteLLM's own
floor); ``--client-processes K`` ours again with K client processes (0: skip).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from _common import (
    MODEL,
    EndpointProcess,
    Row,
    emit,
    endpoint,
    examples,
    make_session,
    warm_up,
    write_jsonl,
)

LATENCY = 0.1


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_peer(
    peer: str, url: EndpointProcess, n: int, c: int, work: Path, tag: str
) -> dict[str, float]:
    """0.2.0 on ``n`` fresh rows: calls, window at the endpoint, process wall and CPU."""
    data = write_jsonl(
        [{"input": f"{tag} question {i}", "ideal": f"{tag} question {i}"} for i in range(n)],
        work / f"{tag}.jsonl",
    )
    (work / "prompt.md").write_text("Answer briefly.\n")
    command = [peer, "optimize", str(data), str(work / "prompt.md"), "-m", MODEL]
    command += ["--input-field", "input", "--output-field", "ideal", "--metric", "exact"]
    command += ["--strategy", "iterative", "--max-iterations", "1", "--max-workers", str(c)]
    command += ["--reasoning-model", "openai/reasoner", "--reasoning-base-url", url]
    command += ["--reasoning-api-key", "sk-none", "--run-dir", str(work / f".reflex-{tag}")]
    env = {**os.environ, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-none"}
    before = url.stats()
    url.mark()
    cpu, wall = children_cpu(), time.perf_counter()
    subprocess.run(command, env=env, cwd=work, check=True, capture_output=True)
    wall, cpu = time.perf_counter() - wall, children_cpu() - cpu
    after = url.stats()
    calls = after["requests"] - before["requests"]
    window = after["last_answer"] - after["first_request"]
    return {"calls": calls, "T": window, "wall": wall, "cpu": cpu}


def ours(
    url: EndpointProcess, calls: int, c: int, tag: str, processes: int = 0
) -> dict[str, float]:
    """Our evaluation of ``calls`` fresh rows: wall time, endpoint window and process CPU."""
    session = make_session(url, c, processes=processes)
    rows = examples(calls, tag)
    url.mark()
    cpu, wall = time.process_time(), time.perf_counter()
    snapshot = session.evaluate("Answer briefly.", rows, "test:versus")
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    session.close()
    assert snapshot.n_errors == 0 and len(snapshot.samples) == calls
    after = url.stats()
    return {"T": wall, "window": after["last_answer"] - after["first_request"], "cpu": cpu}


def bare(url: str, calls: int, c: int, tag: str) -> float:
    from latency import bare_litellm

    return bare_litellm(url, calls, c, tag)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--peer", default="/tmp/peer-venv/bin/aevyra-reflex")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 8, 64, 256])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--n-serial", type=int, default=100)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--client-processes", type=int, default=0)
    parser.add_argument("--bare", action="store_true")
    parser.add_argument("--rows", default=None)
    args = parser.parse_args()
    if not Path(args.peer).exists():
        print(f"peer not installed at {args.peer}: skipped (see the module docstring)")
        return
    got: dict[tuple[int, str], list[float]] = defaultdict(list)
    with (
        endpoint(0.0) as fast,
        endpoint(LATENCY) as slow,
        tempfile.TemporaryDirectory() as tmp,
    ):
        work = Path(tmp)
        for url in (fast, slow):
            warm_up(url)
            if args.client_processes:
                warm_up(url, args.client_processes)
        small = run_peer(args.peer, fast, 20, 8, work, "small")
        for rep in range(args.reps):
            for c in args.workers:
                n = args.n_serial if c == 1 else args.n
                measure(args, got, fast, slow, work, small, rep, c, n)
                report_row(got, c, n, partial=True)
    rows = [report_row(got, c, args.n_serial if c == 1 else args.n) for c in args.workers]
    emit([row for group in rows for row in group], args.rows)


def measure(
    args: argparse.Namespace,
    got: dict[tuple[int, str], list[float]],
    fast: EndpointProcess,
    slow: EndpointProcess,
    work: Path,
    small: dict[str, float],
    rep: int,
    c: int,
    n: int,
) -> None:
    tag = f"r{rep}c{c}"
    peer = run_peer(args.peer, slow, n, c, work, f"p{tag}")
    calls = int(peer["calls"])
    mine = ours(slow, calls, c, f"o{tag}")
    peer0 = run_peer(args.peer, fast, n, c, work, f"p0{tag}")
    mine0 = ours(fast, calls, c, f"o0{tag}")
    got[c, "calls"].append(calls)
    got[c, "peer"].append(peer["T"])
    got[c, "peer_wall"].append(peer["wall"])
    got[c, "peer0"].append(peer0["T"])
    got[c, "ours"].append(mine["T"])
    got[c, "ours_window"].append(mine["window"])
    got[c, "ours0"].append(mine0["T"])
    if n < args.n:  # few calls (C = 1): per-call CPU from a full-size run at L = 0
        peer0 = run_peer(args.peer, fast, args.n, c, work, f"pc{tag}")
        mine0 = ours(fast, int(peer0["calls"]), c, f"oc{tag}")
    got[c, "ours_cpu"].append(mine0["cpu"] / peer0["calls"])
    extra = peer0["calls"] - small["calls"]
    got[c, "peer_cpu"].append((peer0["cpu"] - small["cpu"]) / extra)
    if args.client_processes:
        got[c, "split"].append(ours(slow, calls, c, f"s{tag}", args.client_processes)["T"])
    if args.bare:
        got[c, "bare"].append(bare(slow, calls, c, f"b{tag}"))


def report_row(
    got: dict[tuple[int, str], list[float]], c: int, n: int, partial: bool = False
) -> list[Row]:
    med = {key: statistics.median(values) for (cc, key), values in got.items() if cc == c}
    calls = med["calls"]
    ideal = calls * LATENCY / c
    bound = 1.10 * max(ideal, med["peer0"])
    ratio = med["ours"] / med["peer"]
    # A peer figure <= 0 is noise (its start-up varies more than the calls cost): no verdict.
    cpu_ratio = med["ours_cpu"] / med["peer_cpu"] if med["peer_cpu"] > 0 else float("inf")
    extra = f", ours -pK {med['split']:.2f}s" if "split" in med else ""
    extra += f", bare litellm {med['bare']:.2f}s" if "bare" in med else ""
    reps = len(got[c, "calls"])
    print(
        f"{'  rep' if partial else 'C'}={c:<4} {calls:.0f} calls, N*L/C {ideal:.2f}s: "
        f"ours {med['ours']:.2f}s (at the endpoint {med['ours_window']:.2f}s, T0 "
        f"{med['ours0']:.2f}s){extra}; 0.2.0 {med['peer']:.2f}s "
        f"(T0 {med['peer0']:.2f}s, process wall {med['peer_wall']:.2f}s); ours/peer {ratio:.2f}, "
        f"ours/(1.10 max(NL/C, T0_peer)) {med['ours'] / bound:.2f}; CPU/call ours "
        f"{med['ours_cpu'] * 1e3:.2f} ms, 0.2.0 {med['peer_cpu'] * 1e3:.2f} ms "
        f"({cpu_ratio:.2f}x) [median of {reps}]",
        flush=True,
    )
    return [
        Row(
            "21",
            f"C={c} N={calls:.0f}: ours / 0.2.0 (T0 ours / 0.2.0)",
            f"{med['ours']:.2f}/{med['peer']:.2f}s ({med['ours0']:.1f}/{med['peer0']:.1f})",
            "ours <= peer",
            ratio <= 1.0,
        ),
        Row(
            "21",
            f"  C={c}: ours / 1.10 max(NL/C, T0_peer)",
            f"{med['ours'] / bound:.2f}",
            "<= 1",
            med["ours"] <= bound,
        ),
        Row(
            "21",
            f"  C={c}: CPU/call ours / 0.2.0",
            f"{med['ours_cpu'] * 1e3:.2f}/{med['peer_cpu'] * 1e3:.2f} ms",
            "ours <= peer",
            cpu_ratio <= 1.0,
        ),
    ]


if __name__ == "__main__":
    main()
