"""The --max-response-mb cap on both transports (reflex/models/body_limit.py), against a real
HTTP server on 127.0.0.1: an answer over the cap fails, whether its length is announced or it
is streamed, and the URL in the error carries no credentials."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx
import pytest
from aiohttp import web

from reflex.models.body_limit import (
    DEFAULT_MAX_RESPONSE_MB,
    ResponseTooLarge,
    current_limit,
    read_capped,
    response_limit,
    watching,
)
from reflex.models.runner import LoopRunner

MB = 2**20


async def _sized(request: web.Request) -> web.Response:
    return web.Response(body=b"x" * int(request.query["n"]))


async def _streamed(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse()  # chunked: no Content-Length to refuse it by
    await response.prepare(request)
    for _ in range(int(request.query["chunks"])):
        await response.write(b"y" * 65536)
    await response.write_eof()
    return response


@contextlib.asynccontextmanager
async def _server() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_get("/sized", _sized)
    app.router.add_get("/streamed", _streamed)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def test_the_cap_is_set_per_context() -> None:
    assert current_limit() == int(DEFAULT_MAX_RESPONSE_MB * MB)
    with response_limit(0.5):
        assert current_limit() == MB // 2
    assert current_limit() == int(DEFAULT_MAX_RESPONSE_MB * MB)


async def _lean(path: str) -> bytes:
    """The lean transport's read (aiohttp), under a 1 MiB cap."""
    async with _server() as base:
        with response_limit(1):
            async with aiohttp.ClientSession() as session, session.get(base + path) as got:
                return await read_capped(got, "the test server")


@pytest.mark.parametrize("path", [f"/sized?n={2 * MB}", "/streamed?chunks=32"])
def test_the_lean_transport_stops_reading_past_the_cap(runner: LoopRunner, path: str) -> None:
    with pytest.raises(ResponseTooLarge, match="more than 1 MB from the test server"):
        runner.run(_lean(path))
    assert runner.run(_lean("/sized?n=1000")) == b"x" * 1000


async def _litellm_way(path: str) -> tuple[Any, Any]:
    """httpx, as LiteLLM reads an answer, inside a watched call with a 1 MiB cap."""
    async with _server() as base:
        with response_limit(1), watching() as watch:
            async with httpx.AsyncClient(trust_env=False) as client:  # no proxy: 127.0.0.1
                url = base.replace("http://", "http://user:s3cret@") + path
                try:
                    return (await client.get(url)).content, watch.tripped
                except ResponseTooLarge as error:
                    return error, watch.tripped


def test_the_litellm_transport_is_capped_inside_a_watched_call(runner: LoopRunner) -> None:
    for path in (f"/sized?n={2 * MB}", "/streamed?chunks=32"):
        error, tripped = runner.run(_litellm_way(path))
        assert isinstance(error, ResponseTooLarge) and tripped is error
        assert "s3cret" not in str(error) and "127.0.0.1" in str(error)
    body, tripped = runner.run(_litellm_way("/sized?n=1000"))
    assert body == b"x" * 1000 and tripped is None
