"""Shared helpers for the benchmarks: the endpoint as a child process, a full Session, rows.

The endpoint runs in its own process so its CPU never counts as the client's (and does not share
the client's GIL). Every script prints figures and may append machine-readable rows to the file
named by ``--rows`` (``bench/run_all`` collects them into one table).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parents[1]
# The model name the endpoint is called with (it answers any name). A name LiteLLM has a price
# for, as real runs do: for an unknown name LiteLLM searches its model map for a price on every
# call (~2-3 ms of CPU). ``BENCH_MODEL=openai/bench`` measures that unpriced path.
MODEL = os.environ.get("BENCH_MODEL", "openai/gpt-4o-mini")


@dataclass
class Row:
    """One line of the summary table: what was measured, the figure, the target, the verdict."""

    target: str
    measure: str
    figure: str
    limit: str = ""
    ok: bool | None = None

    def show(self) -> str:
        verdict = {True: "ok", False: "MISS", None: ""}[self.ok]
        return f"{self.target:<4} {self.measure:<52} {self.figure:>16} {self.limit:>16} {verdict}"


def emit(rows: Sequence[Row], path: str | None) -> None:
    """Print the rows, and append them as JSON lines to ``path`` when given."""
    for row in rows:
        print(row.show(), flush=True)
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row.__dict__) + "\n")


class EndpointProcess(str):
    """The base URL of an endpoint child process; ``stats()`` reads its counters."""

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self}/stats") as response:
            return dict(json.load(response))

    def mark(self) -> None:
        """Start a new timing window: ``first_request`` is the next request's arrival."""
        with urllib.request.urlopen(f"{self}/stats/mark") as response:
            response.read()


@contextlib.contextmanager
def endpoint(latency: float = 0.0, *extra: str) -> Iterator[EndpointProcess]:
    """``python -m reflex.testing.endpoint`` on a free port for the ``with`` block."""
    command = [
        sys.executable,
        "-m",
        "reflex.testing.endpoint",
        "--port",
        "0",
        "--latency",
        str(latency),
    ]
    process = subprocess.Popen([*command, *extra], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert process.stdout is not None
        yield EndpointProcess(process.stdout.readline().split()[-1])
    finally:
        process.terminate()
        process.wait(timeout=10)


def rows_for(n: int, prefix: str = "q") -> list[dict[str, str]]:
    """``n`` distinct rows in the ``{id, input, ideal}`` schema."""
    return [
        {"id": f"{prefix}{i}", "input": f"{prefix} question {i}", "ideal": f"{prefix} question {i}"}
        for i in range(n)
    ]


def write_jsonl(records: Sequence[dict[str, Any]], path: Path) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    return path


def make_session(
    url: str, workers: int, run_dir: str | None = None, callbacks: Any = (), processes: int = 0
) -> Any:
    """A full run Session (sqlite cache, ledger, budget, events, callbacks) against ``url``.

    ``processes``: client processes for LiteLLM's per-call CPU (``--client-processes``).
    """
    from reflex.callbacks import CallbackDispatcher
    from reflex.config import RunConfig
    from reflex.models.cache import ResponseCache
    from reflex.models.client import ClientSettings, ModelSpec, ProviderClient, client_pool
    from reflex.models.runner import LoopRunner
    from reflex.plugins import get_registry
    from reflex.run.budget import Budget
    from reflex.run.evaluate import Evaluator
    from reflex.run.replay import CallReplay
    from reflex.run.session import Session
    from reflex.run.store import RunStore

    run_dir = run_dir or tempfile.mkdtemp(prefix="reflex-bench-")
    config = RunConfig(
        models=[MODEL],
        api_base=url,
        max_workers=workers,
        run_dir=run_dir,
        client_processes=processes,
    )
    store = RunStore(run_dir)
    client = ProviderClient(
        ClientSettings(max_workers=workers),
        cache=ResponseCache(store.cache_path),
        replay=CallReplay(store.run_id),
        offload=client_pool(processes),
    )
    spec = ModelSpec(MODEL, api_base=url, extra={"api_key": "sk-none"})
    metric = get_registry().metric("exact_match")
    evaluator = Evaluator(client=client, models=[spec], metrics=[metric], weights={})
    return Session(
        config=config,
        runner=LoopRunner.shared(),
        client=client,
        evaluator=evaluator,
        budget=Budget(config.budget, client.ledger),
        store=store,
        dispatcher=CallbackDispatcher(list(callbacks)),
    )


def examples(n: int, prefix: str = "q") -> list[Any]:
    from reflex.data.dataset import load_dataset

    return list(load_dataset(rows_for(n, prefix)))


def warm_up(url: str, processes: int = 0) -> None:
    """Import litellm and open its HTTP clients once, outside any timed region.

    With ``processes``, also wait until every client process has LiteLLM loaded.
    """
    import time

    from reflex.models.client import client_pool

    pool = client_pool(processes)
    while pool is not None and not all(worker.ready for worker in pool.workers):
        time.sleep(0.05)
    session = make_session(url, 4 * max(1, processes), processes=processes)
    session.evaluate("warm", examples(8 * max(1, processes), "warm"), "warm")
    session.close()
