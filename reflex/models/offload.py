"""Client processes: LiteLLM's per-call CPU off the run's event loop (opt-in).

LiteLLM spends 3-8 ms of CPU per call (request building, response objects, pricing), all on the
run's one event loop. When that CPU is the bottleneck (many calls in flight to a fast provider)
or delays the loop (responses wait to be read), ``client_processes = K``
(``--client-processes K``) starts K processes that only run
:func:`reflex.models.litellm_call.call_once` (:mod:`reflex.models.offload_worker`), with the
first call that
can leave the run's process. The cache, single-flight, the ledger, retries and the shared
back-off stay in the run's process (which never imports LiteLLM if all its calls go out).

``max_workers`` stays the number of requests in flight. A run whose calls all go to client
processes splits its ``max_workers`` slots between them, and a slot is held only while a request
is on the wire (see :mod:`reflex.models.offload_worker`); the run admits up to 1.5 times
``max_workers`` (at least 4 more) calls so the next requests are built while others wait. When
the run makes its first call in its own process (an in-process provider such as ``local`` or
``fake``, or a LiteLLM callback registered in the run's process, whose logging lives there), it
waits until the calls in client processes are done and from then on holds a slot for the whole
call, wherever it runs (these rules, and their invariants: :mod:`reflex.models.admission`).

Calls the lean transport can take (:func:`reflex.models.wire.lean_candidate`) stay in the run's
process: there they cost a fraction of a client process's LiteLLM call.

Settings made on the ``litellm`` module in the run's process are not seen by the workers;
environment variables are (changes are sent before the next call). A worker that dies costs its
calls a retry (on another worker); if none is left, calls run in the run's process, each holding
a slot for the whole call.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from reflex.models.body_limit import current_limit
from reflex.models.deadline import CallDeadlineExceeded, within_deadline
from reflex.models.litellm_call import Completion
from reflex.models.offload_protocol import (
    RemoteError,
    plain_messages,
    plain_spec,
    portable,
    receive,
    send,
)

if TYPE_CHECKING:
    from reflex.models.spec import ModelSpec

__all__ = ["OffloadPool", "RemoteError", "portable"]

READY_WAIT_S = 300.0  # a worker imports LiteLLM first: seconds, more on a busy machine


class _Worker:
    """One client process seen from the run: its socket, its calls in flight, a reader thread."""

    def __init__(self) -> None:
        self.sock, child = socket.socketpair()
        # A fresh interpreter that imports only this module: no fork of a threaded process, and
        # (unlike multiprocessing's spawn) the user's script is not run again in the child.
        # The folder that holds the ``reflex`` package (not reflex/ itself: its types.py would
        # shadow the standard library's in an interpreter whose startup imported nothing).
        home = str(Path(__file__).resolve().parents[2])
        code = (
            f"import sys; sys.path.insert(0, {home!r}); "
            "from reflex.models.offload_worker import entry"
        )
        code += "; entry()"
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, str(child.fileno())],
            pass_fds=[child.fileno()],
            stdin=subprocess.DEVNULL,
        )
        child.close()
        self.lock = threading.Lock()
        self.ready = False
        self.gone = False  # its socket reached end of stream
        self.served = 0  # answers (results or provider errors) this process sent back
        self.environment = dict(os.environ)  # what the process has in os.environ
        self.pending: dict[int, asyncio.Future[Completion]] = {}
        self.reader = threading.Thread(target=self._read, name="reflex-client-reader", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while (received := receive(self.sock)) is not None:
            rid, message = received
            status, payload = message if isinstance(message, tuple) else ("error", message)
            if status == "ready":
                self.ready = True
                continue
            self.served += 1
            future = self.pending.pop(rid, None)
            if future is not None:
                future.get_loop().call_soon_threadsafe(_settle, future, status, payload)
        self.ready, self.gone = False, True  # what it was doing is retried elsewhere
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


def _settle(future: asyncio.Future[Completion], status: str, payload: object) -> None:
    if future.done():
        return
    if status == "ok" and isinstance(payload, Completion):
        future.set_result(payload)
    elif isinstance(payload, BaseException):  # a provider error, or why the answer was unreadable
        future.set_exception(payload)
    else:  # nothing a client process sends
        future.set_exception(TypeError(f"not an answer: {payload!r}"))


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
        return portable(dict(spec.extra)) and portable(spec.request_options())

    def ready(self) -> bool:
        """Whether any worker has LiteLLM loaded and can take a call now."""
        return any(worker.ready for worker in self.workers)

    def alive(self) -> bool:
        """Whether any worker is running (ready, or still importing LiteLLM)."""
        return any(w.process.poll() is None and not w.gone for w in self.workers)

    async def _worker_for(self, slots: int | None) -> tuple[int, _Worker]:
        """The least busy ready worker (with a share of ``slots``, if given); waits for one."""
        deadline = time.monotonic() + READY_WAIT_S
        while True:
            ready = [
                (i, w)
                for i, w in enumerate(self.workers)
                if w.ready and (slots is None or share(slots, len(self.workers), i))
            ]
            if ready:
                return min(ready, key=lambda item: len(item[1].pending))
            if not self.alive() or time.monotonic() > deadline:
                raise RemoteError(("APIConnectionError",), "no client process is running")
            await asyncio.sleep(0.02)

    async def call(
        self,
        spec: ModelSpec,
        messages: Sequence[Mapping[str, object]],
        attempt: int,
        gate: tuple[int, int] | None = None,
        deadline: float | None = None,
    ) -> Completion:
        """One attempt in a worker; a provider error comes back as :class:`RemoteError`.

        ``gate=(key, max_workers)``: the worker holds one of its share of that run's slots
        while the request is on the wire; None: the caller holds a slot for the whole call.
        ``deadline``: seconds the attempt may take once a worker has it (models.deadline).
        """
        index, worker = await self._worker_for(None if gate is None else gate[1])
        self._ids += 1
        rid = self._ids
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        worker.pending[rid] = future
        slots = None if gate is None else (gate[0], share(gate[1], len(self.workers), index))
        try:
            environment = dict(os.environ)  # keys set after the worker started must reach it
            if environment != worker.environment:
                send(worker.sock, worker.lock, 0, ("env", environment))
                worker.environment = environment
            limit = current_limit()  # --max-response-mb, in bytes
            message = ("call", plain_spec(spec), plain_messages(messages), attempt, slots, limit)
            send(worker.sock, worker.lock, rid, message)
            if worker.gone:  # it died as the call was handed over: its reader may have missed it
                raise OSError("client process exited")
            return await within_deadline(future, deadline)
        except (asyncio.CancelledError, CallDeadlineExceeded):
            worker.pending.pop(rid, None)
            with contextlib.suppress(OSError):
                send(worker.sock, worker.lock, rid, ("cancel",))  # cancel it there too
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


def share(slots: int, workers: int, index: int) -> int:
    """Worker ``index``'s share of ``slots`` (they sum to ``slots``; some may get 0)."""
    return slots // workers + (1 if index < slots % workers else 0)


os.register_at_fork(after_in_child=OffloadPool._forget_after_fork)
