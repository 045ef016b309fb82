"""The wire between a run and its client processes (:mod:`reflex.models.offload`).

Messages are 4-byte length + 8-byte call id + pickle, over an anonymous socketpair that only the
run and its own child hold. Provider errors travel as :class:`RemoteError`, which keeps what the
retry policy reads (class names, status code, Retry-After).
"""

from __future__ import annotations

import dataclasses
import pickle
import socket
import struct
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from reflex.models.retry import retry_after_seconds

if TYPE_CHECKING:
    from reflex.models.spec import ModelSpec

__all__ = ["RemoteError", "describe", "plain_messages", "plain_spec", "portable", "receive", "send"]

_HEADER = struct.Struct("!IQ")  # body length, call id


class RemoteError(Exception):
    """A provider error raised in a client process, with what the retry policy reads."""

    def __init__(
        self,
        classes: Sequence[str],
        message: str,
        status_code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.remote_classes = tuple(classes)  # the original class and its bases, by name
        self.status_code = status_code
        self.litellm_response_headers = (
            None if retry_after is None else {"retry-after": str(retry_after)}
        )

    def __reduce__(
        self,
    ) -> tuple[type[RemoteError], tuple[tuple[str, ...], str, int | None, float | None]]:
        retry = self.litellm_response_headers
        after = None if retry is None else float(retry["retry-after"])
        return (RemoteError, (self.remote_classes, str(self), self.status_code, after))


def send(sock: socket.socket, lock: threading.Lock, rid: int, message: object) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    with lock:
        sock.sendall(_HEADER.pack(len(data), rid) + data)


def receive(sock: socket.socket) -> tuple[int, object] | None:
    """The next ``(call id, message)``, or None at end of stream.

    A message that cannot be unpickled comes back as the exception, under its call id.
    """
    header = _read_exactly(sock, _HEADER.size)
    if header is None:
        return None
    size, rid = _HEADER.unpack(header)
    body = _read_exactly(sock, size)
    if body is None:
        return None
    try:
        return rid, pickle.loads(body)
    except Exception as exc:  # noqa: BLE001 - answered as this call's error
        return rid, exc


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        try:
            chunk = sock.recv(min(left, 1 << 20))
        except OSError:
            return None
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def describe(exc: Exception) -> RemoteError:
    """``exc`` as a :class:`RemoteError` that pickles (LiteLLM's errors hold HTTP objects)."""
    code = getattr(exc, "status_code", None)
    return RemoteError(
        [cls.__name__ for cls in type(exc).__mro__],
        str(exc),
        code if isinstance(code, int) else None,
        retry_after_seconds(exc),
    )


_PLAIN = (str, int, float, bool, type(None))


def portable(value: object) -> bool:
    """Whether ``value`` is made of plain JSON-like values (safe to hand to a client process)."""
    if type(value) in _PLAIN:
        return True
    if isinstance(value, (list, tuple)):  # exactly list or tuple: a subclass may not unpickle
        return type(value) in (list, tuple) and all(portable(item) for item in value)
    if isinstance(value, Mapping):
        return all(type(k) is str and portable(v) for k, v in value.items())
    return False


def _plain(value: Any) -> Any:
    """``value`` made of plain ``str``/``dict``/``list`` (a subclass may not unpickle there)."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def plain_spec(spec: ModelSpec) -> ModelSpec:
    """``spec`` with plain ``str`` fields (a ``str`` subclass would not unpickle there)."""
    base = None if spec.api_base is None else str(spec.api_base)
    choice = spec.tool_choice
    return dataclasses.replace(
        spec,
        model=str(spec.model),
        api_base=base,
        extra=dict(spec.extra),
        tools=tuple(_plain(tool) for tool in spec.tools),
        tool_choice=None if choice is None else _plain(choice),
        response_format=None if spec.response_format is None else _plain(spec.response_format),
    )


def plain_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages as plain values: text as ``str``, a tool-call turn's ``tool_calls`` list
    and a null ``content`` kept as they are (JSON values, as the rows hold them)."""
    return [
        {
            str(k): None
            if v is None
            else _plain(v)
            if isinstance(v, (Mapping, list, tuple))
            else str(v)
            for k, v in message.items()
        }
        for message in messages
    ]
