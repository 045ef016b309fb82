"""One long-lived event loop on a background thread (reflex/models/runner.py): a sync caller gets
a coroutine's result or its exception; closing awaits the closers and cancels what is pending.
(An interrupted caller's calls are cancelled: tests/reliability/test_interrupt.py.)"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from reflex.models.runner import LoopRunner


@pytest.fixture
def own() -> Iterator[LoopRunner]:
    runner = LoopRunner()
    yield runner
    runner.close()


def test_a_coroutine_runs_on_the_runner_s_thread(own: LoopRunner) -> None:
    async def where() -> str:
        await asyncio.sleep(0)
        return threading.current_thread().name

    async def failing() -> None:
        await asyncio.sleep(0)
        raise ValueError("boom")

    assert own.run(where()) == "reflex-loop"
    with pytest.raises(ValueError, match="boom"):
        own.run(failing())
    assert own.run(where()) == "reflex-loop"  # the loop outlives a failed coroutine


def test_close_awaits_the_closers_and_cancels_what_is_pending(own: LoopRunner) -> None:
    closed: list[str] = []

    async def closer() -> None:
        closed.append("session")

    async def forever() -> None:
        await asyncio.Event().wait()

    own.at_close(closer)
    pending = asyncio.run_coroutine_threadsafe(forever(), own.loop)
    own.close()
    assert closed == ["session"] and pending.cancelled() and own.loop.is_closed()
    own.close()  # a second close is a no-op


def test_the_shared_runner_is_one_per_process() -> None:
    shared = LoopRunner.shared()
    assert LoopRunner.shared() is shared and LoopRunner.current() is shared
