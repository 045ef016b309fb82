"""Just enough HTTP/1.1 for the local test endpoint: read one request, write one response."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass

from reflex.data.json_types import JSONLike

__all__ = ["Request", "error_body", "read_request", "send", "send_raw"]

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests"}
_REASONS |= {500: "Internal Server Error", 503: "Service Unavailable"}


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
    lines = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "Connection: keep-alive",
        *(f"{name}: {value}" for name, value in (headers or {}).items()),
    ]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    await writer.drain()
    return True
