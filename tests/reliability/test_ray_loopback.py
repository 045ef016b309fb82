"""A compare grid on a local Ray cluster talks over loopback only (issue 29, item 0).

Ray 2.x rewrites a loopback address (``ray start --node-ip-address 127.0.0.1``, ``ray.init(
address="127.0.0.1:P")``) to the machine's default-route address (``services.resolve_ip_for_
localhost`` -> ``node_ip_address_from_perspective``): the head advertised and listened on it and
the driver dialled it, which worked or not depending on the machine. tests/services.py starts
the head with Ray's loopback switch and the Ray executor sets it in the driver; here nothing of
the cluster, its workers or the driver may hold a socket off loopback while a grid runs.

``services``: tests/services.py starts ``ray start --head``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import HANG_POLLS, make_rows, reasoner_answer, task_answer
from loopback import LoopbackWatch
from services import RayCluster

from reflex import PromptOptimizer, load_dataset
from reflex.grid.compare import compare
from reflex.testing.endpoint import ChatRequest, serve

RAY = "ray"


def answer(request: ChatRequest) -> str:
    if request.model == "reasoner":
        return reasoner_answer(request)  # type: ignore[arg-type]  # same .user/.system
    return task_answer(request)  # type: ignore[arg-type]


@pytest.fixture
def routable_lookups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Each time the driver asks Ray for the machine's routable address (the rewrite's source)."""
    ray = pytest.importorskip(RAY)
    from ray._private import ray_constants, services

    ray.shutdown()  # the grid below connects afresh, under watch
    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", True)  # Linux's default
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "1")  # so that the end restores it
    monkeypatch.delenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
    calls: list[Any] = []
    real = services.node_ip_address_from_perspective

    def recorded(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(services, "node_ip_address_from_perspective", recorded)
    yield calls
    ray.shutdown()


@pytest.mark.services
def test_a_grid_on_a_local_cluster_uses_loopback_only(
    ray_cluster: RayCluster,
    routable_lookups: list[Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ray

    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    rows = make_rows(40)
    datasets = [load_dataset(rows[k * 20 : (k + 1) * 20], name=f"d{k}") for k in range(2)]
    with serve(responder=answer) as url, LoopbackWatch([ray_cluster.session]) as watch:
        comparison = compare(
            PromptOptimizer()
            .set_dataset(rows[:20])
            .add_provider("openai/task", api_base=str(url))
            .add_metric("exact_match")
            .set_reasoning_model("openai/reasoner", base_url=str(url))
            .set_run_dir(tmp_path)
            .configure(max_iterations=1, max_workers=2),
            "Classify the sentiment.",
            ["iterative"],
            seeds=2,
            max_calls=30,
            executor="ray",
            ray_address=ray_cluster.address,
            datasets=datasets,
        )
        nodes = ray.nodes()
        context = ray.get_runtime_context()
    assert len(comparison.runs) == 4
    assert watch.off_loopback == set(), sorted(watch.off_loopback)
    assert watch.connected > 0 and watch.samples > 2  # it saw the cluster's traffic
    assert routable_lookups == []  # the driver never swapped 127.0.0.1 for eth0's address
    assert context.gcs_address == ray_cluster.address
    assert {n["NodeManagerAddress"] for n in nodes} == {"127.0.0.1"}, nodes
    assert "Local node IP: 127.0.0.1" in ray_cluster.log.read_text("utf-8", errors="replace")


@pytest.mark.parametrize(
    ("address", "local"),
    [
        ("127.0.0.1:6379", True),
        ("localhost:6379", True),
        ("[::1]:6379", True),
        (None, True),
        ("10.0.0.5:6379", False),
        ("head.example:6379", False),
    ],
)
def test_which_ray_addresses_are_kept_on_loopback(
    address: str | None, local: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reflex.grid.executors import _on_this_machine

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert _on_this_machine(address) is local


@pytest.mark.services
def test_the_compare_command_on_a_local_cluster_uses_loopback_only(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    """``aevyra-reflex compare --executor ray --ray-address 127.0.0.1:P``: the CLI's own process
    (its driver) and the cluster's hold no socket off loopback."""
    rows = "".join(json.dumps(r) + "\n" for r in make_rows(20))
    (tmp_path / "data.jsonl").write_text(rows, encoding="utf-8")
    (tmp_path / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    env = {**os.environ, "OPENAI_API_KEY": "sk-none", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)  # the command must keep loopback itself
    env.pop("RAY_ADDRESS", None)
    with serve(responder=answer) as url:
        args = [str(Path(sys.executable).parent / "aevyra-reflex"), "compare"]
        args += ["data.jsonl", "prompt.md", "-m", "openai/task", "--api-base", str(url)]
        args += ["--reasoning-model", "openai/reasoner", "--reasoning-base-url", str(url)]
        args += ["--strategies", "iterative", "--seeds", "2", "--max-calls", "30"]
        args += ["--max-iterations", "1", "--executor", "ray"]
        args += ["--ray-address", ray_cluster.address]
        proc = subprocess.Popen(
            args,
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its session: the watch covers it and its children
        )
        with LoopbackWatch([ray_cluster.session, proc.pid]) as watch:
            try:  # a hang guard, not a speed requirement (a driver dialling eth0 hung)
                _, err = proc.communicate(timeout=HANG_POLLS * 0.01)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                pytest.fail(f"compare --executor ray never ended; sockets: {watch.off_loopback}")
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    assert watch.off_loopback == set(), sorted(watch.off_loopback)
    assert watch.connected > 0
    (saved,) = (tmp_path / ".reflex").rglob("compare.json")
    assert len(json.loads(saved.read_text(encoding="utf-8"))["runs"]) == 2
