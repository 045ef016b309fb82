"""Client processes: LiteLLM's per-call CPU off the run's event loop (opt-in).

LiteLLM spends 3-8 ms of CPU per call (request building, response objects, pricing), all on the
run's one event loop. When that CPU is the bottleneck (many calls in flight to a fast provider)
``client_processes = K`` (``--client-processes K``) starts K processes that only run
:func:`reflex.litellm_call.call_once`. Everything else stays in the run's process: the cache,
single-flight, the ledger, retries, the shared back-off and the ``max_workers`` semaphore (a slot
is held until the worker's answer is back), so ``max_workers`` is still the number of requests in
flight and every retry decision is made in one place.

Until a worker has imported LiteLLM (seconds), calls run in-process. In-process providers
(``local``, ``fake``, anything from :func:`reflex.providers.register_provider`) always run in the
run's process, and so does every call while a LiteLLM callback is registered there (its logging
lives in that process). Settings made on the ``litellm`` module in the run's process are not
seen by the workers; environment variables are.

Wire format: 4-byte length + pickle, over a socketpair per worker. Each side reads with a
dedicated thread, so a write never waits on a busy event loop.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from reflex.litellm_call import Completion, call_once

if TYPE_CHECKING:
    from reflex.providers import ModelSpec

__all__ = ["OffloadPool", "RemoteError", "portable"]

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

    def __reduce__(self) -> tuple[Any, ...]:
        retry = self.litellm_response_headers
        after = None if retry is None else float(retry["retry-after"])
        return (RemoteError, (self.remote_classes, str(self), self.status_code, after))


def _send(sock: socket.socket, lock: threading.Lock, rid: int, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    with lock:
        sock.sendall(_HEADER.pack(len(data), rid) + data)


def _receive(sock: socket.socket) -> tuple[int, Any] | None:
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


class _Worker:
    """One client process seen from the run: its socket, its calls in flight, a reader thread."""

    def __init__(self) -> None:
        self.sock, child = socket.socketpair()
        # A fresh interpreter that imports only this module: no fork of a threaded process, and
        # (unlike multiprocessing's spawn) the user's script is not run again in the child.
        home = str(Path(__file__).resolve().parents[1])
        code = f"import sys; sys.path.insert(0, {home!r}); import reflex.offload as o; o._entry()"
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, str(child.fileno())],
            pass_fds=[child.fileno()],
            stdin=subprocess.DEVNULL,
        )
        child.close()
        self.lock = threading.Lock()
        self.ready = False
        self.served = 0  # answers (results or provider errors) this process sent back
        self.environment = dict(os.environ)  # what the process has in os.environ
        self.pending: dict[int, asyncio.Future[Completion]] = {}
        self.reader = threading.Thread(target=self._read, name="reflex-client-reader", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while (received := _receive(self.sock)) is not None:
            rid, message = received
            status, payload = message if isinstance(message, tuple) else ("error", message)
            if status == "ready":
                self.ready = True
                continue
            self.served += 1
            future = self.pending.pop(rid, None)
            if future is not None:
                future.get_loop().call_soon_threadsafe(_settle, future, status, payload)
        self.ready = False  # the process is gone: what it was doing is retried in-process
        for rid in list(self.pending):
            future = self.pending.pop(rid)
            lost = RemoteError(("APIConnectionError",), "client process exited during the call")
            future.get_loop().call_soon_threadsafe(_settle, future, "error", lost)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        self.sock.close()


def _settle(future: asyncio.Future[Completion], status: str, payload: Any) -> None:
    if future.done():
        return
    if status == "ok":
        future.set_result(payload)
    else:
        future.set_exception(payload)


class OffloadPool:
    """K client processes; :meth:`call` runs one LiteLLM call in the least busy ready one."""

    _shared: ClassVar[OffloadPool | None] = None
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, processes: int) -> None:
        if processes < 1:
            raise ValueError(f"client processes must be >= 1, got {processes}")
        self.workers = [_Worker() for _ in range(processes)]
        self._ids = 0

    @classmethod
    def shared(cls, processes: int) -> OffloadPool:
        """The process-wide pool of ``processes`` workers (kept across runs, closed at exit)."""
        with cls._shared_lock:
            pool = cls._shared
            if pool is not None and len(pool.workers) != processes:
                pool.close()
                pool = None
            if pool is None:
                pool = cls._shared = cls(processes)
                atexit.register(pool.close)
            return pool

    @classmethod
    def _forget_after_fork(cls) -> None:
        cls._shared = None
        cls._shared_lock = threading.Lock()

    @staticmethod
    def portable(spec: ModelSpec) -> bool:
        """Whether a call with ``spec`` can run in a client process (plain decoding options)."""
        return portable(dict(spec.extra))

    def ready(self) -> bool:
        """Whether any worker has LiteLLM loaded and can take a call now."""
        return any(worker.ready for worker in self.workers)

    async def call(
        self, spec: ModelSpec, messages: Sequence[Mapping[str, str]], attempt: int
    ) -> Completion:
        """One attempt in a worker; a provider error comes back as :class:`RemoteError`."""
        ready = [worker for worker in self.workers if worker.ready]
        worker = min(ready, key=lambda w: len(w.pending))
        self._ids += 1
        rid = self._ids
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        worker.pending[rid] = future
        try:
            environment = dict(os.environ)  # keys set after the worker started must reach it
            if environment != worker.environment:
                _send(worker.sock, worker.lock, 0, ("env", environment))
                worker.environment = environment
            call = ("call", _plain(spec), _plain_messages(messages), attempt)
            _send(worker.sock, worker.lock, rid, call)
            return await future
        except asyncio.CancelledError:
            worker.pending.pop(rid, None)
            with contextlib.suppress(OSError):
                _send(worker.sock, worker.lock, rid, ("cancel",))  # cancel it there too
            raise
        except OSError as exc:  # the worker went away before it got the call
            worker.pending.pop(rid, None)
            lost = f"client process unreachable: {exc}"
            raise RemoteError(("APIConnectionError",), lost) from exc

    def close(self) -> None:
        for worker in self.workers:
            worker.close()
        if OffloadPool._shared is self:
            OffloadPool._shared = None


def _describe(exc: Exception) -> RemoteError:
    from reflex.retry import retry_after_seconds

    code = getattr(exc, "status_code", None)
    return RemoteError(
        [cls.__name__ for cls in type(exc).__mro__],
        str(exc),
        code if isinstance(code, int) else None,
        retry_after_seconds(exc),
    )


def _entry() -> None:
    """A client process's main: its socket is the file descriptor named on the command line."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle
    _worker_main(socket.socket(fileno=int(sys.argv[1])))


def _worker_main(sock: socket.socket) -> None:
    """A client process: answer call messages with ``call_once`` until the socket closes."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    loop = asyncio.new_event_loop()
    lock = threading.Lock()
    tasks: dict[int, asyncio.Task[None]] = {}

    async def answer(rid: int, spec: ModelSpec, messages: list[dict[str, str]], n: int) -> None:
        try:
            reply: tuple[str, Any] = ("ok", await call_once(litellm, spec, messages, n))
        except Exception as exc:  # noqa: BLE001 - carried to the run, which classifies it
            reply = ("error", _describe(exc))
        finally:
            tasks.pop(rid, None)
        _send(sock, lock, rid, reply)

    def start(rid: int, message: Any) -> None:
        if isinstance(message, Exception):  # unreadable here: a permanent error for the call
            _send(sock, lock, rid, ("error", _describe(message)))
        elif message[0] == "call":
            tasks[rid] = loop.create_task(answer(rid, *message[1:]))
        elif message[0] == "env":  # the run's environment changed (e.g. an API key was set)
            os.environ.clear()
            os.environ.update(message[1])
        elif (task := tasks.pop(rid, None)) is not None:  # "cancel": the run gave up on it
            task.cancel()

    def read() -> None:
        while (received := _receive(sock)) is not None:
            loop.call_soon_threadsafe(start, *received)
        loop.call_soon_threadsafe(loop.stop)

    _send(sock, lock, 0, ("ready", None))
    threading.Thread(target=read, name="reflex-client-reader", daemon=True).start()
    loop.run_forever()


_PLAIN = (str, int, float, bool, type(None))


def portable(value: Any) -> bool:
    """Whether ``value`` is made of plain JSON-like values (safe to hand to a client process)."""
    if type(value) in _PLAIN:
        return True
    if type(value) in (list, tuple):
        return all(portable(item) for item in value)
    if isinstance(value, Mapping):
        return all(type(k) is str and portable(v) for k, v in value.items())
    return False


def _plain(spec: ModelSpec) -> ModelSpec:
    """``spec`` with plain ``str`` fields (a ``str`` subclass would not unpickle there)."""
    base = None if spec.api_base is None else str(spec.api_base)
    return dataclasses.replace(spec, model=str(spec.model), api_base=base, extra=dict(spec.extra))


def _plain_messages(messages: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    return [{str(k): str(v) for k, v in message.items()} for message in messages]


os.register_at_fork(after_in_child=OffloadPool._forget_after_fork)
