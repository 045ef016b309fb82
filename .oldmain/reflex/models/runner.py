"""One long-lived event loop on a background thread: async inside, a sync API outside.

Strategies and the builder are synchronous; model calls are async so a run-wide semaphore can
keep ``max_workers`` calls in flight. One loop per process (not ``asyncio.run`` per call, nor a
loop per run) keeps LiteLLM's loop-bound HTTP clients and its background logging worker valid;
closing a loop under them leaves "Event loop is closed" errors behind.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from collections.abc import Coroutine
from typing import ClassVar, TypeVar

__all__ = ["LoopRunner"]

T = TypeVar("T")
CANCEL_WAIT_S = 10.0  # how long an interrupted caller waits for its calls to be cancelled


class LoopRunner:
    """Runs coroutines on an event loop thread and blocks for their results."""

    _shared: ClassVar[LoopRunner | None] = None
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def shared(cls) -> LoopRunner:
        """The process-wide runner (started on first use, a daemon thread, never closed)."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
                atexit.register(cls._shared.close)
            return cls._shared

    @classmethod
    def _forget_after_fork(cls) -> None:
        # A forked child has no loop thread: it must start its own on first use.
        cls._shared = None
        cls._shared_lock = threading.Lock()

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="reflex-loop", daemon=True
        )
        self._thread.start()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def run(self, coro: Coroutine[object, None, T]) -> T:
        """Run ``coro`` on the loop and return its result (exceptions propagate).

        If the caller is interrupted (Ctrl-C raises KeyboardInterrupt here, in the main thread),
        the coroutine is cancelled and, for up to ``CANCEL_WAIT_S``, waited for: its in-flight
        model calls are cancelled before the run records its partial result and closes the
        cache, and no paid call goes on in the background after the run has ended.
        """
        started, settled = threading.Event(), threading.Event()
        future = asyncio.run_coroutine_threadsafe(_signalling(coro, started, settled), self._loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            # A coroutine cancelled before it started never runs (nor sets ``settled``).
            if started.is_set() and threading.current_thread() is not self._thread:
                settled.wait(CANCEL_WAIT_S)
            raise

    def close(self) -> None:
        """Cancel what is still pending (e.g. LiteLLM's logging worker), stop and close."""
        if self._loop.is_closed():
            return
        if self._thread.is_alive():
            self.run(_cancel_pending())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()


async def _signalling(
    coro: Coroutine[object, None, T], started: threading.Event, settled: threading.Event
) -> T:
    started.set()
    try:
        return await coro
    finally:
        settled.set()


async def _cancel_pending() -> None:
    current = asyncio.current_task()
    pending = [task for task in asyncio.all_tasks() if task is not current]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


os.register_at_fork(after_in_child=LoopRunner._forget_after_fork)
