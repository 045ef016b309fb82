"""Target 3: the same workload through aevyra-reflex 0.2.0 (PyPI) and through us, side by side.

    python -m venv /tmp/peer-venv && /tmp/peer-venv/bin/pip install 'aevyra-reflex[openai]==0.2.0'
    python bench/peer.py [--peer /tmp/peer-venv/bin/aevyra-reflex] [--n 1200] [--rows FILE]

0.2.0 has no evaluate-only command, so it runs ``optimize`` (echo endpoint: the baseline already
meets its threshold) and we count the requests the endpoint received; we then make exactly that
many calls through our Session at the same concurrency. Its wall time includes its start-up.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from _common import MODEL, Row, emit, endpoint, examples, make_session, warm_up, write_jsonl

LATENCY = 0.1


def run_peer(peer: str, url: str, n: int, workers: int, work: Path) -> tuple[float, int]:
    data = write_jsonl(
        [
            {"input": f"w{workers} question {i}", "ideal": f"w{workers} question {i}"}
            for i in range(n)
        ],
        work / f"peer{workers}.jsonl",
    )
    (work / "prompt.md").write_text("Answer briefly.\n")
    before = endpoint_requests(url)
    command = [
        peer,
        "optimize",
        str(data),
        str(work / "prompt.md"),
        "-m",
        MODEL,
        "--input-field",
        "input",
        "--output-field",
        "ideal",
        "--metric",
        "exact",
        "--strategy",
        "iterative",
        "--max-iterations",
        "1",
        "--max-workers",
        str(workers),
        "--reasoning-model",
        "openai/reasoner",
        "--reasoning-base-url",
        url,
        "--reasoning-api-key",
        "sk-none",
        "--run-dir",
        str(work / ".reflex"),
    ]
    env = {**os.environ, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-none"}
    started = time.perf_counter()
    subprocess.run(command, env=env, cwd=work, check=True, capture_output=True)
    return time.perf_counter() - started, endpoint_requests(url) - before


def endpoint_requests(url: str) -> int:
    import json
    import urllib.request

    with urllib.request.urlopen(f"{url}/stats") as response:
        return int(json.load(response)["requests"])


def ours(url: str, calls: int, workers: int, processes: int = 0) -> float:
    session = make_session(url, workers, processes=processes)
    rows = examples(calls, f"ours{workers}p{processes}")
    started = time.perf_counter()
    session.evaluate("Answer briefly.", rows, "test:peer")
    session.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--peer", default="/tmp/peer-venv/bin/aevyra-reflex")
    parser.add_argument("--n", type=int, default=1200)
    parser.add_argument("--workers", type=int, nargs="+", default=[4, 16, 64])
    parser.add_argument(
        "--client-processes", type=int, default=2, help="ours again with this many (0: skip)"
    )
    parser.add_argument("--rows", default=None)
    args = parser.parse_args()
    if not Path(args.peer).exists():
        print(f"peer not installed at {args.peer}: skipped (see the module docstring)")
        emit([Row("3", "aevyra-reflex 0.2.0 comparison", "skipped", "", None)], args.rows)
        return
    rows: list[Row] = []
    with endpoint(LATENCY) as url, tempfile.TemporaryDirectory() as tmp:
        warm_up(url)
        processes = args.client_processes
        if processes:
            warm_up(url, processes)
        for workers in args.workers:
            peer_wall, calls = run_peer(args.peer, url, args.n, workers, Path(tmp))
            our_wall = ours(url, calls, workers)
            split = ours(url, calls, workers, processes) if processes else float("nan")
            ideal = calls * LATENCY / workers
            print(
                f"C={workers:<3} {calls} calls: aevyra-reflex 0.2.0 {peer_wall:6.2f}s "
                f"({peer_wall / ideal:.1f}x ideal), ours {our_wall:6.2f}s "
                f"({our_wall / ideal:.1f}x ideal), ours with {processes} client processes "
                f"{split:6.2f}s ({split / ideal:.1f}x ideal)",
                flush=True,
            )
            rows.append(
                Row(
                    "3",
                    f"{calls} calls C={workers}: 0.2.0 / ours / ours -p{processes}",
                    f"{peer_wall:.1f} / {our_wall:.1f} / {split:.1f}s",
                    f"NL/C={ideal:.1f}s",
                )
            )
    emit(rows, args.rows)


if __name__ == "__main__":
    main()
