"""A cap on the size of one answer, on both transports (``--max-response-mb``, default 16).

Answers used to be read whole: 100 MB bodies with ``--max-workers 4`` took a run to 4.3 GB of
memory on the lean transport and 5.4 GB through LiteLLM. An answer over the cap ends the call
with :class:`ResponseTooLarge`, not retried (a server that sent one will send it again) and
reported in one line naming the cap and the option that raises it.

The lean transport counts the answer as it reads it (:func:`read_capped`). LiteLLM's path reads
through ``httpx.AsyncClient.send`` (the OpenAI SDK's client and LiteLLM's own handler alike):
:func:`watching` marks a call, and only a marked call's answer is read through a counting
stream (:func:`install`); LiteLLM wraps what that raises in its own classes, so the call reads
the mark afterwards and raises :class:`ResponseTooLarge` itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from reflex.config import default

if TYPE_CHECKING:
    import aiohttp
    import httpx

__all__ = [
    "DEFAULT_MAX_RESPONSE_MB",
    "ResponseTooLarge",
    "Watch",
    "current_limit",
    "install",
    "read_capped",
    "response_limit",
    "watching",
]

DEFAULT_MAX_RESPONSE_MB: float = default("max_response_mb")
_MB = 2**20
_LIMIT: ContextVar[int] = ContextVar(
    "reflex_max_response", default=int(DEFAULT_MAX_RESPONSE_MB * _MB)
)


class ResponseTooLarge(Exception):
    """An answer over ``--max-response-mb``: the call fails, not retried."""

    def __init__(self, limit: int, where: str) -> None:
        self.limit = limit
        super().__init__(f"answer of more than {limit / _MB:g} MB from {where} (not read further)")


def current_limit() -> int:
    """The cap, in bytes, for calls made in this context."""
    return _LIMIT.get()


@contextlib.contextmanager
def response_limit(megabytes: float) -> Iterator[None]:
    """Calls made inside use a cap of ``megabytes`` MiB (the run client sets its own)."""
    token = _LIMIT.set(int(megabytes * _MB))
    try:
        yield
    finally:
        _LIMIT.reset(token)


def _too_long(length: str | None, limit: int) -> bool:
    try:
        return length is not None and int(length) > limit
    except ValueError:
        return False


async def read_capped(response: aiohttp.ClientResponse, where: str) -> bytes:
    """The whole (decoded) body, or :class:`ResponseTooLarge` once it passes the cap."""
    limit = current_limit()
    if _too_long(response.headers.get("Content-Length"), limit):
        raise ResponseTooLarge(limit, where)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise ResponseTooLarge(limit, where)
        chunks.append(chunk)
    return b"".join(chunks)


class Watch:
    """One LiteLLM call's cap, and the over-size answer it met (None: none)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.tripped: ResponseTooLarge | None = None


_WATCH: ContextVar[Watch | None] = ContextVar("reflex_response_watch", default=None)


@contextlib.contextmanager
def watching() -> Iterator[Watch]:
    """Answers read by httpx inside are capped (see the module's docstring)."""
    install()
    watch = Watch(current_limit())
    token = _WATCH.set(watch)
    try:
        yield watch
    finally:
        _WATCH.reset(token)


_INSTALLED: list[Any] = []


def install() -> None:
    """Wrap ``httpx.AsyncClient.send`` once: a watched call's answer is read capped."""
    if _INSTALLED:
        return
    import httpx

    original = httpx.AsyncClient.send

    async def send(self: httpx.AsyncClient, request: httpx.Request, **kwargs: Any) -> Any:
        watch = _WATCH.get()
        if watch is None or kwargs.get("stream"):
            return await original(self, request, **kwargs)
        response = await original(self, request, **{**kwargs, "stream": True})
        try:
            if _too_long(response.headers.get("content-length"), watch.limit):
                raise _trip(watch, request)
            response.stream = _capped(response.stream, watch, request)
            await response.aread()  # what send(stream=False) does, through the count
        except BaseException:
            await response.aclose()
            raise
        return response

    _INSTALLED.append(original)
    httpx.AsyncClient.send = send  # type: ignore[method-assign]


def _trip(watch: Watch, request: httpx.Request) -> ResponseTooLarge:
    url = request.url.copy_with(query=None, username=None, password=None)
    watch.tripped = ResponseTooLarge(watch.limit, str(url))
    return watch.tripped


def _capped(stream: Any, watch: Watch, request: httpx.Request) -> httpx.AsyncByteStream:
    """The answer's bytes as received, ending in :class:`ResponseTooLarge` past the cap."""
    import httpx

    class Capped(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            size = 0
            async for chunk in stream:
                size += len(chunk)
                if size > watch.limit:
                    raise _trip(watch, request)
                yield chunk

        async def aclose(self) -> None:
            await stream.aclose()

    return Capped()
