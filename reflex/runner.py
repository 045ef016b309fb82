"""One event loop per run, on a background thread: async inside, a sync API outside.

Strategies and the builder are synchronous; model calls are async so a run-wide semaphore can
keep ``max_workers`` calls in flight. Using one long-lived loop (not ``asyncio.run`` per call)
keeps LiteLLM's loop-bound HTTP clients valid for the whole run.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopRunner"]

T = TypeVar("T")


class LoopRunner:
    """Runs coroutines on a private event loop thread and blocks for their results."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="reflex-loop",
                                        daemon=True)
        self._thread.start()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and return its result (exceptions propagate)."""
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()
