"""The test endpoint's HTTP/1.1 (:mod:`reflex.testing.http`), over a real socket on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

from reflex.testing.http import Request, error_body, read_request, send, send_padded, send_raw

Handler = Callable[[Request | None, asyncio.StreamWriter], Awaitable[object]]


async def _exchange(raw: bytes, handler: Handler) -> tuple[Request | None, bytes]:
    """Serve one connection on 127.0.0.1 with ``handler``; send ``raw``; return what came back."""
    seen: list[Request | None] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await read_request(reader)
        seen.append(request)
        await handler(request, writer)
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(raw)
        await writer.drain()
        writer.write_eof()  # the client is done: an empty request reads as none
        answer = await asyncio.wait_for(reader.read(), 30)
        writer.close()
    return seen[0], answer


async def _nothing(request: Request | None, writer: asyncio.StreamWriter) -> None:
    return None


def test_a_request_with_content_length_is_read_whole() -> None:
    body = b'{"model": "m"}'
    raw = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 14\r\n"
    request, _ = asyncio.run(_exchange(raw + b"X-Trace : a:b\r\n\r\n" + body, _nothing))
    assert request == Request(
        "POST",
        "/v1/chat/completions",
        {"host": "x", "content-length": "14", "x-trace": "a:b"},
        body,
    )


def test_a_chunked_body_is_joined() -> None:
    raw = b"POST /v1 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    raw += b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    request, _ = asyncio.run(_exchange(raw, _nothing))
    assert request is not None and request.body == b"abcde"


def test_a_closed_connection_reads_as_no_request() -> None:
    request, _ = asyncio.run(_exchange(b"", _nothing))
    assert request is None


def test_send_writes_json_with_its_length_and_reason() -> None:
    async def answer(request: Request | None, writer: asyncio.StreamWriter) -> None:
        await send(writer, 429, error_body("slow down", "rate_limit"), {"Retry-After": "1"})

    _, raw = asyncio.run(_exchange(b"GET / HTTP/1.1\r\n\r\n", answer))
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 429 Too Many Requests"
    assert f"Content-Length: {len(body)}" in lines and "Retry-After: 1" in lines
    assert json.loads(body) == {
        "error": {"message": "slow down", "type": "rate_limit", "code": "rate_limit"}
    }


def test_a_given_header_replaces_the_default_and_an_empty_one_drops_it() -> None:
    async def answer(request: Request | None, writer: asyncio.StreamWriter) -> None:
        await send_raw(writer, 200, b"hi", {"content-type": "text/plain", "Connection": ""})

    _, raw = asyncio.run(_exchange(b"GET / HTTP/1.1\r\n\r\n", answer))
    head = raw.partition(b"\r\n\r\n")[0].decode().split("\r\n")
    assert head == ["HTTP/1.1 200 OK", "Content-Length: 2", "content-type: text/plain"]


def test_send_padded_streams_head_pad_and_tail_as_one_body() -> None:
    async def answer(request: Request | None, writer: asyncio.StreamWriter) -> None:
        assert await send_padded(writer, 200, b"[", (1 << 20) + 5, b"]") is False

    _, raw = asyncio.run(_exchange(b"GET / HTTP/1.1\r\n\r\n", answer))
    head, _, body = raw.partition(b"\r\n\r\n")
    assert b"Content-Length" not in head and b"Connection: close" in head
    assert body == b"[" + b"x" * ((1 << 20) + 5) + b"]"
