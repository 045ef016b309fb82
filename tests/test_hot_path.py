"""The per-call hot path: group-committed cache writes and one payment for identical calls
(LiteLLM's logging and price look-ups: tests/test_litellm_call.py). Behaviour only; the
benchmarks measure the speed.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reflex.errors import StorageError
from reflex.models.cache import CachedResponse, ResponseCache
from reflex.models.client import ClientSettings, ModelSpec, ProviderClient
from reflex.models.retry import RetryPolicy
from reflex.models.runner import LoopRunner
from reflex.run.replay import CallReplay
from reflex.testing import FakeModel

MESSAGES = [{"role": "user", "content": "hi there"}]


@pytest.fixture(scope="module")
def runner() -> Iterator[LoopRunner]:
    loop = LoopRunner()
    yield loop
    loop.run(_cancel_leftover_tasks())
    loop.close()


async def _cancel_leftover_tasks() -> None:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def put_many(runner: LoopRunner, cache: ResponseCache, n: int) -> None:
    async def go() -> None:
        await asyncio.gather(
            *(cache.aput(f"k{i}", CachedResponse(f"t{i}", i, 1, None, "run")) for i in range(n))
        )

    runner.run(go())


def test_aput_rows_are_committed_when_it_returns(runner: LoopRunner, tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)
    put_many(runner, cache, 50)
    # Another connection sees every row before the cache is closed: they are committed.
    other = sqlite3.connect(path)
    assert other.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 50
    other.close()
    assert cache.get("k7") == CachedResponse("t7", 7, 1, None, "run") and len(cache) == 50
    cache.close()
    cache.close()  # idempotent
    assert len(ResponseCache(path)) == 50


def test_aput_in_memory_cache(runner: LoopRunner) -> None:
    cache = ResponseCache(None)
    put_many(runner, cache, 3)
    assert len(cache) == 3
    cache.close()


def test_aput_failure_is_a_storage_error(runner: LoopRunner, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    real = cache._db

    class FullDisk:  # the commit path's connection, failing as a full disk does
        def execute(self, *args: Any) -> Any:
            raise sqlite3.OperationalError("database or disk is full")

        def close(self) -> None:
            real.close()

    cache._db = FullDisk()  # type: ignore[assignment]
    with pytest.raises(StorageError, match=r"cache\.sqlite: database or disk is full"):
        put_many(runner, cache, 2)
    cache.close()


def test_aput_after_close_is_refused(runner: LoopRunner, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    cache.close()
    with pytest.raises(RuntimeError, match="closed"):
        put_many(runner, cache, 1)


def test_identical_calls_share_one_payment_across_the_commit(
    runner: LoopRunner, tmp_path: Path
) -> None:
    fake = FakeModel(lambda r: f"answer to {r.user}").install()
    cache = ResponseCache(tmp_path / "cache.sqlite")
    client = ProviderClient(
        ClientSettings(retry=RetryPolicy(max_retries=0)), cache=cache, replay=CallReplay("run")
    )

    async def twice() -> list[Any]:
        return list(
            await asyncio.gather(
                *(client.complete(ModelSpec("fake/m"), MESSAGES) for _ in range(5))
            )
        )

    answers = runner.run(twice())
    assert len(fake.requests) == 1 and sum(not a.cached for a in answers) == 1
    assert client.ledger.by_role["task"].calls == 1
    assert client.ledger.by_role["task"].cache_hits == 4
    cache.close()
