"""Beyond one machine (issue 22): the Router across deployments, shared limits, a grid on Ray.

    python bench/scale.py --router [--rate 20] [--calls 600]   # or: python bench/scale_out.py

1. One run through a LiteLLM Router over three local deployments (``python -m
   reflex.testing.endpoint --rate-limit R``, 429 + Retry-After above R requests/s), against one
   deployment alone: throughput (target >= 0.9 x 3R), calls lost, calls failed, 429s counted at
   the fakes.
2. Two processes through the same Router config at once, with and without
   ``router_settings.redis_url`` (a redis-server started here): 429s counted at the fakes.
3. ``--ray``: a 12-cell compare grid (2 strategies x 2 seeds x 3 datasets) in one process and
   on a local ``ray start --head``: the same results, and the wall-time ratio (bench/scale_ray.py).
   ``--ray`` alone runs only the grid; ``--router --ray`` both.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def deployments(n: int, rate: float, latency: float) -> Iterator[list[str]]:
    """``n`` endpoint processes, each limited to ``rate`` requests/s; yields their base URLs."""
    procs, urls = [], []
    try:
        for _ in range(n):
            cmd = [sys.executable, "-m", "reflex.testing.endpoint", "--port", "0"]
            cmd += ["--latency", str(latency), "--rate-limit", str(rate)]
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
            procs.append(proc)
            assert proc.stdout is not None
            urls.append(proc.stdout.readline().split()[-1])
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)


def refused(url: str) -> int:
    with urllib.request.urlopen(url.rstrip("/") + "/stats", timeout=10) as answer:
        return int(json.load(answer)["faults"].get("rate_limit", 0))


def config(urls: list[str], rate: float, redis: str | None = None) -> dict[str, Any]:
    model_list = [
        {
            "model_name": "task",
            "litellm_params": {
                "model": "openai/served",
                "api_base": url,
                "api_key": "sk-none",
                "rpm": int(rate * 60),
            },
            "model_info": {"id": f"bench-{i}"},
        }
        for i, url in enumerate(urls)
    ]
    return {"model_list": model_list, "router_settings": {"redis_url": redis} if redis else {}}


async def _calls(cfg: dict[str, Any], prefix: str, n: int, workers: int) -> dict[str, Any]:
    from reflex.models.client import ClientSettings, ModelSpec, ProviderClient
    from reflex.models.router import ModelRouter

    client = ProviderClient(ClientSettings(max_workers=workers), router=ModelRouter(cfg))
    spec = ModelSpec("router/task", timeout=60.0)
    jobs = [client.complete(spec, [{"role": "user", "content": f"{prefix} {i}"}]) for i in range(n)]
    started = time.perf_counter()
    done = await asyncio.gather(*jobs, return_exceptions=True)
    wall = time.perf_counter() - started
    errors = [f"{type(d).__name__}: {d}"[:300] for d in done if isinstance(d, BaseException)]
    return {
        "wall": wall,
        "lost": sum(
            not isinstance(d, BaseException) and d.text != f"{prefix} {i}"
            for i, d in enumerate(done)
        ),
        "failed": len(errors),
        "errors": errors[:3],
        "retries": client.ledger.total().retries,
        "served": client.ledger.to_dict().get("deployments", {}),
    }


def one_run(rate: float, calls: int, latency: float, workers: int) -> None:
    from reflex.models.client import load_litellm

    load_litellm()  # its 5-9 s import is not a call
    for n in (1, 3):
        with deployments(n, rate, latency) as urls:
            out = asyncio.run(_calls(config(urls, rate), f"d{n}", calls, workers))
            at_fakes = sum(refused(u) for u in urls)
        throughput = calls / out["wall"]
        print(
            f"router, {n} deployment(s) x {rate:g} req/s: {calls} calls in {out['wall']:.2f}s = "
            f"{throughput:.1f} req/s ({throughput / (n * rate):.2f} x {n}R); lost {out['lost']}, "
            f"failed {out['failed']}, 429s at the fakes {at_fakes}, retries {out['retries']}, "
            f"served {sorted(out['served'].values())}",
            flush=True,
        )


@contextlib.contextmanager
def redis_server() -> Iterator[str | None]:
    binary = shutil.which("redis-server")
    if binary is None:
        print("redis-server not installed (bash .ci/services): skipping the shared-limit figure")
        yield None
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", tmp]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, start_new_session=True)
        time.sleep(0.5)
        try:
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)


def two_processes(rate: float, calls: int, latency: float) -> None:
    with redis_server() as redis:
        if redis is None:
            return
        for shared in (None, redis):
            with deployments(3, rate, latency) as urls, tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "router.json"
                path.write_text(json.dumps(config(urls, rate, shared)), encoding="utf-8")
                outs = _workers(path, calls)
                wall = max(o["wall"] for o in outs)  # each from its first call to its last
                at_fakes = [refused(u) for u in urls]
            label = "shared through Redis" if shared else "not shared (no redis_url)"
            print(
                f"two processes x {calls} calls, limits {label}: 429s at the fakes {at_fakes}, "
                f"lost {sum(o['lost'] for o in outs)}, failed {sum(o['failed'] for o in outs)}, "
                f"{2 * calls / wall:.1f} req/s together (3R = {3 * rate:g})",
                flush=True,
            )
            for error in (e for o in outs for e in o["errors"]):
                print(f"    failed: {error}")


def _workers(path: Path, calls: int) -> list[dict[str, Any]]:
    cmd = [sys.executable, __file__, "worker", str(path), str(calls)]
    procs = [
        subprocess.Popen([*cmd, f"p{k}"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for k in range(2)
    ]
    for proc in procs:  # both have imported LiteLLM: start them together
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    return [json.loads(p.communicate()[0]) for p in procs]


def worker(path: str, calls: int, prefix: str) -> None:
    from reflex.models.client import load_litellm

    load_litellm()
    print("ready", flush=True)
    sys.stdin.readline()
    cfg = json.loads(Path(path).read_text(encoding="utf-8"))
    print(json.dumps(asyncio.run(_calls(cfg, prefix, calls, 16))), flush=True)


def main(argv: list[str] | None = None) -> None:
    import argparse

    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["worker"]:
        worker(args[1], int(args[2]), args[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=10.0, help="R: requests/s per deployment")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=32, help="--max-workers")
    parser.add_argument("--router", action="store_true", help="the Router figures (default)")
    parser.add_argument("--ray", action="store_true", help="the 12-cell grid on Ray")
    parser.add_argument("--cpus", type=int, default=2, help="--ray: the Ray cluster's CPUs")
    parser.add_argument("--grid-latency", type=float, default=0.05, help="--ray: endpoint s")
    opts = parser.parse_args(args)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if opts.router or not opts.ray:
        one_run(opts.rate, opts.calls, opts.latency, opts.workers)
        two_processes(opts.rate, opts.calls // 2, opts.latency)
    if opts.ray:
        from scale_ray import grid_on_ray

        grid_on_ray(opts.cpus, opts.grid_latency)


if __name__ == "__main__":
    main()
