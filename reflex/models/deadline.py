"""The total deadline of one call attempt: connect, send and the whole answer, however it trickles.

LiteLLM's ``timeout`` reaches the HTTP client as a per-operation limit: a provider that sends
its headers and then one byte every few seconds never trips it, and the call waits forever.
:func:`within_deadline` bounds the whole attempt (wherever it runs: this process, a client
process, any transport) by the call's ``timeout``; past it the attempt is cancelled and raises
:class:`CallDeadlineExceeded`, which the retry layer treats like any timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from reflex.models import providers
from reflex.models.spec import ModelSpec

__all__ = ["CallDeadlineExceeded", "call_deadline", "within_deadline"]

T = TypeVar("T")


class CallDeadlineExceeded(Exception):
    """An attempt whose complete answer did not arrive within its total deadline (transient)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"no complete answer within {seconds:g}s (connect, send and the whole body); "
            "the provider is stalled or trickling its answer"
        )
        self.seconds = seconds


def call_deadline(spec: ModelSpec) -> float | None:
    """Seconds one attempt may take in all: ``spec.timeout`` for a remote provider.

    None for an in-process provider (``local``, ``fake``, one registered in Python): there is no
    socket to stall, and a model computing in a thread cannot be stopped by cancelling its call.
    """
    if providers.is_custom(spec.model.partition("/")[0]):
        return None
    return spec.timeout


async def within_deadline(call: Awaitable[T], seconds: float | None) -> T:
    """``await call``, cancelled after ``seconds`` (None: no limit) with CallDeadlineExceeded.

    On Python 3.11+ the call runs in the caller's task under ``asyncio.timeout`` (what
    ``wait_for`` itself became in 3.12). 3.11's ``wait_for`` runs it as a task of its own,
    queued behind every task already ready: when an evaluation fans out its rows, no request
    left until each of them had taken its first step (30-110 ms per 500-row evaluation at
    C = 64, bench/overlap.py); now each admitted call is sent in its own first step.
    """
    if seconds is None:
        return await call
    timeout = getattr(asyncio, "timeout", None)
    try:
        if timeout is None:  # Python 3.10
            return await asyncio.wait_for(call, seconds)
        async with timeout(seconds):
            return await call
    except asyncio.TimeoutError:
        raise CallDeadlineExceeded(seconds) from None
