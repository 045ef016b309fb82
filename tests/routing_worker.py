"""A process that sends N distinct calls through a LiteLLM Router config (tests/test_router.py).

    python tests/routing_worker.py CONFIG.json PREFIX N MAX_WORKERS

Prints "ready" once LiteLLM is imported, waits for a line on stdin (so that several workers
start calling at once), then prints one JSON line: answers, errors (first lines), the ledger's
deployments and retries.
"""

from __future__ import annotations

import asyncio
import json
import sys

from reflex.models.client import ClientSettings, ModelSpec, ProviderClient, load_litellm
from reflex.models.router import ModelRouter


async def _main(config: str, prefix: str, calls: int, workers: int) -> dict[str, object]:
    with open(config, encoding="utf-8") as handle:
        client = ProviderClient(
            ClientSettings(max_workers=workers), router=ModelRouter(json.load(handle))
        )
    spec = ModelSpec("router/task", timeout=60.0)
    messages = [[{"role": "user", "content": f"{prefix} {i}"}] for i in range(calls)]
    done = await asyncio.gather(
        *(client.complete(spec, m) for m in messages), return_exceptions=True
    )
    answers = [d.text for d in done if not isinstance(d, BaseException)]
    ledger = client.ledger.to_dict()
    return {
        "answers": answers,
        "errors": [f"{type(d).__name__}: {d}"[:300] for d in done if isinstance(d, BaseException)],
        "deployments": ledger.get("deployments", {}),
        "retries": ledger["total"]["retries"],
    }


if __name__ == "__main__":
    load_litellm()
    print("ready", flush=True)
    sys.stdin.readline()
    config, prefix, calls, workers = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    print(json.dumps(asyncio.run(_main(config, prefix, calls, workers))))
