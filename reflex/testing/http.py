"""Just enough HTTP/1.1 for the local test endpoint: read one request, write one response."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass

from reflex.data.json_types import JSONLike

__all__ = [
    "Request",
    "error_body",
    "read_request",
    "send",
    "send_padded",
    "send_raw",
    "send_slowly",
]

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests"}
_REASONS |= {401: "Unauthorized", 500: "Internal Server Error", 503: "Service Unavailable"}


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


def error_body(message: str, code: str = "error") -> dict[str, dict[str, str]]:
    return {"error": {"message": message, "type": code, "code": code}}


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    line = await reader.readline()
    if not line.strip():
        return None
    method, path, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while (raw := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = raw.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = await _read_chunked(reader)
    else:
        body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
    return Request(method, path, headers, body)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while size := int((await reader.readline()).split(b";")[0].strip() or b"0", 16):
        parts.append(await reader.readexactly(size))
        await reader.readline()
    await reader.readline()  # the blank line after the last chunk (no trailers expected)
    return b"".join(parts)


async def send(
    writer: asyncio.StreamWriter,
    status: int,
    payload: Mapping[str, JSONLike],
    headers: dict[str, str] | None = None,
) -> bool:
    return await send_raw(writer, status, json.dumps(payload).encode(), headers)


async def send_raw(
    writer: asyncio.StreamWriter,
    status: int,
    body: bytes,
    headers: dict[str, str] | None = None,
) -> bool:
    writer.write(_head(status, body, headers) + body)
    await writer.drain()
    return True


async def send_slowly(writer: asyncio.StreamWriter, status: int, body: bytes, drip: float) -> bool:
    """The head at once, then ``body`` one byte every ``drip`` seconds (a slow-drip provider)."""
    writer.write(_head(status, body, None))
    await writer.drain()
    for index in range(len(body)):
        await asyncio.sleep(drip)
        writer.write(body[index : index + 1])
        await writer.drain()
    return True


async def send_padded(
    writer: asyncio.StreamWriter, status: int, head: bytes, pad: int, tail: bytes
) -> bool:
    """``head``, ``pad`` bytes of ``x`` and ``tail`` as one body, written 1 MiB at a time (a
    huge answer without building it in memory), its end the connection's; returns False."""
    writer.write(_head(status, b"", {"Content-Length": "", "Connection": "close"}) + head)
    chunk = b"x" * min(pad, 1 << 20)
    while pad > 0:
        writer.write(chunk[:pad])
        pad -= len(chunk)
        await writer.drain()
    writer.write(tail)
    await writer.drain()
    return False


def _head(status: int, body: bytes, headers: dict[str, str] | None) -> bytes:
    fields = {"Content-Type": "application/json", "Content-Length": str(len(body))}
    fields["Connection"] = "keep-alive"
    for name, value in (headers or {}).items():  # a given header replaces the default one
        fields = {k: v for k, v in fields.items() if k.lower() != name.lower()}
        if value:  # an empty value leaves the header out
            fields[name] = value
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
    lines += [f"{name}: {value}" for name, value in fields.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
