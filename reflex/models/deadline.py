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
    """``await call``, cancelled after ``seconds`` (None: no limit) with CallDeadlineExceeded."""
    if seconds is None:
        return await call
    try:
        return await asyncio.wait_for(call, seconds)
    except asyncio.TimeoutError:
        raise CallDeadlineExceeded(seconds) from None
