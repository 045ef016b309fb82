"""A 12-cell compare grid (2 strategies x 2 seeds x 3 datasets) in one process and on Ray.

    python bench/scale.py --ray   # or: python bench/scale_ray.py [--cpus 2] [--latency 0.05]

Prints whether both gave the same results cell for cell (a deterministic local endpoint) and
the wall-time ratio. Ray's own start (``ray start --head``) is not counted; its workers'
first imports are.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scale_out import ROOT

STRATEGIES = ["iterative", "random"]
SEEDS = 2
DATASETS = 3  # 2 x 2 x 3 = 12 cells


@contextlib.contextmanager
def ray_head(cpus: int) -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    tmp = tempfile.mkdtemp(prefix="rr-")
    args = [str(Path(sys.executable).parent / "ray"), "start", "--head", "--block"]
    args += ["--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus", str(cpus)]
    args += ["--include-dashboard", "false", "--disable-usage-stats", "--temp-dir", tmp]
    env = {**os.environ, "OPENAI_API_KEY": "sk-none", "RAY_USAGE_STATS_ENABLED": "0"}
    env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # else Ray swaps 127.0.0.1 for eth0's address
    proc = subprocess.Popen(
        args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    for _ in range(600):
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        time.sleep(0.1)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def _answer(request: Any) -> str:
    if request.model == "reasoner":
        return "<diagnosis>d</diagnosis>\n<edit>e</edit>\n<prompt>Answer with one word.</prompt>"
    return request.user.split()[-1]


def _datasets() -> list[Any]:
    from reflex import load_dataset

    datasets = []
    for k in range(DATASETS):
        rows = [
            {"id": f"r{i}", "input": f"item {i} word{(i + k) % 3}", "ideal": f"word{(i + k) % 3}"}
            for i in range(20)
        ]
        datasets.append(load_dataset(rows, name=f"d{k}"))
    return datasets


def _grid(url: str, run_dir: Path, **executor: Any) -> tuple[float, list[tuple[Any, ...]]]:
    from reflex import PromptOptimizer
    from reflex.grid.compare import compare

    opt = (
        PromptOptimizer()
        .set_dataset(_datasets()[0])
        .add_provider("openai/task", api_base=url)
        .add_metric("exact_match")
        .set_reasoning_model("openai/reasoner", base_url=url)
        .set_run_dir(run_dir)
        .configure(max_iterations=2, max_workers=4)
    )
    started = time.perf_counter()
    comparison = compare(
        opt,
        "Say the word.",
        STRATEGIES,
        seeds=SEEDS,
        max_calls=60,
        datasets=_datasets(),
        **executor,
    )
    wall = time.perf_counter() - started
    cells = [
        (r.dataset, r.strategy, r.seed, r.final, r.metric_calls, r.per_example)
        for r in comparison.runs
    ]
    assert len(cells) == len(STRATEGIES) * SEEDS * DATASETS
    return wall, cells


def grid_on_ray(cpus: int = 2, latency: float = 0.05) -> None:
    from reflex.models.client import load_litellm
    from reflex.testing.endpoint import serve

    os.environ.setdefault("OPENAI_API_KEY", "sk-none")
    load_litellm()
    with serve(latency=latency, responder=_answer) as url, tempfile.TemporaryDirectory() as tmp:
        local_wall, local = _grid(str(url), Path(tmp) / "local")
        with ray_head(cpus) as address:
            ray_wall, remote = _grid(
                str(url), Path(tmp) / "ray", executor="ray", ray_address=address
            )
    print(
        f"compare grid, {len(local)} cells ({len(STRATEGIES)} strategies x {SEEDS} seeds x "
        f"{DATASETS} datasets, endpoint latency {latency:g}s, load average "
        f"{os.getloadavg()[0]:.1f}): "
        f"in-process {local_wall:.1f}s, Ray ({cpus} CPUs) {ray_wall:.1f}s, ratio "
        f"{local_wall / ray_wall:.2f}x; same results: {local == remote}",
        flush=True,
    )


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "bench"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--latency", type=float, default=0.05)
    opts = parser.parse_args()
    grid_on_ray(opts.cpus, opts.latency)
