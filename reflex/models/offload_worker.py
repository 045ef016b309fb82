"""A client process (:mod:`reflex.models.offload`): LiteLLM calls, and the run's slots on the wire.

The process imports LiteLLM, says ``ready`` and answers ``call`` messages with
:func:`reflex.models.litellm_call.call_once`. A call carries its slot rule:

- ``gate=None``: the run holds a ``max_workers`` slot for the whole call; nothing to do here.
- ``gate=(key, slots)``: this process owns ``slots`` of that run's ``max_workers`` (the run
  splits them between its processes), and a slot is held only while a request is on the wire:
  from sending it to having read the whole response. Building the request and parsing and
  pricing the answer (most of LiteLLM's CPU) then overlap other calls' waits. The slot is taken
  in an HTTP transport installed as ``litellm.aclient_session``; a provider is trusted with that
  only after one of its calls, made holding a slot for the whole call, went through the
  transport. A provider whose calls never do keeps a slot for the whole call. Either way no
  more than ``slots`` requests of that run are on the wire from this process.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import signal
import socket
import sys
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any

from reflex.models.body_limit import response_limit
from reflex.models.litellm_call import Completion, call_once
from reflex.models.offload_protocol import RemoteError, describe, receive, send

if TYPE_CHECKING:
    import httpx

    from reflex.models.client import ModelSpec

__all__ = ["entry"]

Gate = tuple[int, int]  # (the run's key, this process's slots)


class _Probe:
    """Marks that a call went through the transport (the provider can be trusted with it)."""

    used = False


# The current call's slot: a semaphore (take it on the wire), a probe (record use), or None.
_WIRE: contextvars.ContextVar[asyncio.Semaphore | _Probe | None] = contextvars.ContextVar(
    "reflex_wire", default=None
)


def _wire_client() -> httpx.AsyncClient:
    """An httpx client whose transport holds the current call's slot while on the wire."""
    import httpx

    class WireGate(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            # LiteLLM's own transport (aiohttp): ~20% less CPU per call than httpx's.
            from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

            self.inner = AsyncHTTPHandler.create_aiohttp_transport()

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            gate = _WIRE.get()
            if isinstance(gate, asyncio.Semaphore):
                async with gate:
                    return await self._exchange(request)
            if isinstance(gate, _Probe):
                gate.used = True
            return await self._exchange(request)

        async def _exchange(self, request: httpx.Request) -> httpx.Response:
            response = await self.inner.handle_async_request(request)
            try:
                body = await response.aread()
            finally:
                await response.aclose()
            return httpx.Response(
                response.status_code,
                headers=response.headers,
                content=body,
                request=request,
                extensions=response.extensions,
            )

        async def aclose(self) -> None:
            await self.inner.aclose()

    return httpx.AsyncClient(transport=WireGate(), timeout=httpx.Timeout(600.0))


class _Caller:
    """Runs calls under their slot rule; remembers which providers use the transport."""

    def __init__(self, litellm: ModuleType) -> None:
        self.litellm = litellm
        self.gates: dict[Gate, asyncio.Semaphore] = {}
        self.trusted: set[str] = set()

    async def __call__(
        self, spec: ModelSpec, messages: list[dict[str, Any]], attempt: int, gate: Gate | None
    ) -> Completion:
        if gate is None:
            return await call_once(self.litellm, spec, messages, attempt)
        slots = self.gates.setdefault(gate, asyncio.Semaphore(gate[1]))
        provider = spec.model.partition("/")[0]
        if provider in self.trusted:
            token = _WIRE.set(slots)
            try:
                return await call_once(self.litellm, spec, messages, attempt)
            finally:
                _WIRE.reset(token)
        probe = _Probe()
        async with slots:
            token = _WIRE.set(probe)
            try:
                return await call_once(self.litellm, spec, messages, attempt)
            finally:
                _WIRE.reset(token)
                if probe.used:
                    self.trusted.add(provider)


def entry() -> None:
    """A client process's main: its socket is the file descriptor named on the command line."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle
    serve(socket.socket(fileno=int(sys.argv[1])))


def serve(sock: socket.socket) -> None:
    """Answer call messages until the socket closes."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import gc

    import litellm

    litellm.suppress_debug_info = True
    gc.freeze()  # as in providers.load_litellm: keep LiteLLM's objects out of every collection
    litellm.aclient_session = _wire_client()
    caller = _Caller(litellm)
    loop = asyncio.new_event_loop()
    lock = threading.Lock()
    tasks: dict[int, asyncio.Task[None]] = {}

    async def answer(
        rid: int,
        spec: ModelSpec,
        messages: list[dict[str, Any]],
        attempt: int,
        gate: Gate | None,
        limit: int,
    ) -> None:
        try:
            with response_limit(limit / 2**20):  # the run's --max-response-mb
                done = await caller(spec, messages, attempt, gate)
            reply: tuple[str, Completion | RemoteError] = ("ok", done)
        except Exception as exc:  # noqa: BLE001 - carried to the run, which classifies it
            reply = ("error", describe(exc))
        finally:
            tasks.pop(rid, None)
        send(sock, lock, rid, reply)

    def start(rid: int, message: object) -> None:
        if isinstance(message, Exception):  # unreadable here: a permanent error for the call
            send(sock, lock, rid, ("error", describe(message)))
        elif not isinstance(message, tuple):
            raise TypeError(f"not a message: {message!r}")  # the run sends only tuples
        elif message[0] == "call":
            tasks[rid] = loop.create_task(answer(rid, *message[1:]))
        elif message[0] == "env":  # the run's environment changed (e.g. an API key was set)
            os.environ.clear()
            os.environ.update(message[1])
        elif (task := tasks.pop(rid, None)) is not None:  # "cancel": the run gave up on it
            task.cancel()

    def read() -> None:
        while (received := receive(sock)) is not None:
            loop.call_soon_threadsafe(start, *received)
        loop.call_soon_threadsafe(loop.stop)

    send(sock, lock, 0, ("ready", None))
    threading.Thread(target=read, name="reflex-client-reader", daemon=True).start()
    loop.run_forever()
