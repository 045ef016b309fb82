"""The HTTP transport half of :mod:`reflex.inflight` (imported with LiteLLM: it needs httpx)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from reflex.inflight import ticket_var

__all__ = ["GatedTransport"]


class GatedTransport:
    """An httpx async transport that holds the current ticket's slot while a request is out."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def handle_async_request(self, request: Any) -> Any:
        ticket = ticket_var.get()
        if ticket is None:
            return await self._inner.handle_async_request(request)
        ticket.seen = True
        if ticket.held:
            return await self._inner.handle_async_request(request)
        await ticket.limit.acquire()
        release = _once(ticket.limit.release)
        try:
            response = await self._inner.handle_async_request(request)
        except BaseException:
            release()
            raise
        return _with_stream(response, _ReleasingStream(response.stream, release))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __getattr__(self, name: str) -> Any:  # anything else LiteLLM asks its transport
        return getattr(self._inner, name)


def _once(action: Callable[[], None]) -> Callable[[], None]:
    done = False

    def run() -> None:
        nonlocal done
        if not done:
            done = True
            action()

    return run


class _ReleasingStream(httpx.AsyncByteStream):
    """The response body; the slot is released once it is read to the end or closed."""

    def __init__(self, inner: Any, release: Callable[[], None]) -> None:
        self._inner = inner
        self._release = release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        finally:
            self._release()

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._release()


def _with_stream(response: Any, stream: Any) -> Any:
    return httpx.Response(
        status_code=response.status_code,
        headers=response.headers,
        stream=stream,
        extensions=response.extensions,
    )
