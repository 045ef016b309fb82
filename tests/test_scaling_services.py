"""Several processes share each deployment's limit through the Router's Redis (``services``).

Two worker processes (tests/routing_worker.py) send calls at once through the same Router config
with ``router_settings.redis_url``; the three deployments are local endpoints limited to R
requests/s (429 + Retry-After above it), counted at the fakes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest

from reflex.testing.endpoint import serve
from reflex.testing.ratelimit import RateLimit

pytestmark = pytest.mark.services
WORKER = Path(__file__).parent / "routing_worker.py"
R = 8.0
CALLS = 40  # per process


def _config(urls: list[str], redis: str) -> dict[str, object]:
    deployments = [
        {
            "model_name": "task",
            "litellm_params": {
                "model": "openai/served",
                "api_base": url,
                "api_key": "sk-none",
                "rpm": int(R * 60),
            },
            "model_info": {"id": f"shared-{i}"},
        }
        for i, url in enumerate(urls)
    ]
    return {"model_list": deployments, "router_settings": {"redis_url": redis}}


def test_two_processes_stay_within_each_deployments_limit(redis_url: str, tmp_path: Path) -> None:
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    limits = [RateLimit(R) for _ in range(3)]
    with ExitStack() as stack:
        urls = [str(stack.enter_context(serve(limit=lim))) for lim in limits]
        config = tmp_path / "router.json"
        config.write_text(json.dumps(_config(urls, redis_url)), encoding="utf-8")
        workers = [
            subprocess.Popen(
                [sys.executable, str(WORKER), str(config), f"p{k}", str(CALLS), "8"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for k in range(2)
        ]
        for worker in workers:  # both have imported LiteLLM: now they start together
            assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        outs = [json.loads(w.communicate(timeout=600)[0]) for w in workers]
    for k, out in enumerate(outs):
        assert out["errors"] == []  # 0 scored as failures
        assert out["answers"] == [f"p{k} {i}" for i in range(CALLS)]  # 0 lost
    # Counted at the fakes: every call arrived once, and none above a deployment's limit.
    assert sum(lim.admitted for lim in limits) == 2 * CALLS
    assert [lim.refused for lim in limits] == [0, 0, 0]
    assert all(lim.admitted > 0 for lim in limits)
