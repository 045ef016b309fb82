"""A local OpenAI-compatible endpoint for tests and benchmarks (stdlib only, asyncio).

It answers ``POST /v1/chat/completions`` deterministically, after a configurable latency, with
configurable usage numbers and injectable faults; ``GET /v1/models`` and ``GET /stats`` (the
counters as JSON) complete it. One asyncio loop serves hundreds of concurrent keep-alive
connections; the listen backlog is large (4096) so a burst of connects is never refused.

In-process (tests)::

    with serve(latency=0.0, faults=FaultPlan(rate=0.3, seed=0)) as url:
        litellm.completion(model="openai/m", api_base=url, api_key="sk-none", messages=...)
        assert url.stats().faults["429"] > 0

As a process (benchmarks, so the server does not share the client's GIL)::

    python -m reflex.testing.endpoint --port 8000 --latency 0.1 --fault-rate 0.3

The request and answer format is in :mod:`reflex.testing.chat`; which requests fail, and how
(``429``, ``500``, ``timeout``, ``malformed``, ``drop``, ...), in :mod:`reflex.testing.faults`
(both re-exported here). Rate limits and drops answer at once; the rest after ``latency``.
``serve(gate=event)`` holds those answers until the ``threading.Event`` is set, so a test can
keep calls in flight for as long as it needs instead of guessing a latency. ``limit=RateLimit(R)``
(``--rate-limit R``) admits R requests/s, answering 429 + Retry-After above (fault ``rate_limit``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from reflex.testing.chat import ChatRequest, Reply, Responder, completion, echo
from reflex.testing.faults import EXTRA_KINDS, FAULT_KINDS, PERMANENT_KINDS, FaultPlan
from reflex.testing.http import (
    Request,
    error_body,
    read_request,
    send,
    send_padded,
    send_raw,
    send_slowly,
)
from reflex.testing.ratelimit import RateLimit

__all__ = [
    "EXTRA_KINDS",
    "FAULT_KINDS",
    "PERMANENT_KINDS",
    "ChatRequest",
    "Endpoint",
    "EndpointServer",
    "FaultPlan",
    "Reply",
    "Stats",
    "echo",
    "main",
    "serve",
]


@dataclass
class Stats:
    """Counters since start: every chat request, its outcome, and concurrency."""

    requests: int = 0
    completions: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    distinct: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    # time.monotonic() of the first request and of the last answer (benchmarks time a client at
    # the endpoint, without its start-up): not compared, two runs never share them.
    first_request: float = field(default=0.0, compare=False)
    last_answer: float = field(default=0.0, compare=False)

    @property
    def fault_total(self) -> int:
        return sum(self.faults.values())

    def to_dict(self) -> dict[str, float | dict[str, int]]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Stats:  # JSON values into typed fields
        return cls(**data)


class EndpointServer:
    """The server itself; ``start()``/``close()`` run on an event loop the caller owns."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        faults: FaultPlan | None = None,
        responder: Responder = echo,
        usage: tuple[int, int] | None = None,
        gate: threading.Event | None = None,
        capture: list[Request] | None = None,
        limit: RateLimit | None = None,
        reply: Reply | None = None,
    ) -> None:
        self.latency = latency
        self.reply = reply  # sent instead of every completion (faults still come first)
        self.capture = capture  # every chat request (headers and body) is appended here
        self.gate = gate
        self.limit = limit  # R requests/s: 429 + Retry-After above it (reflex.testing.ratelimit)
        self.faults = faults or FaultPlan()
        self.responder = responder
        self.usage = usage
        self._stats = Stats()
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()  # stats() is read from other threads
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def stats(self) -> Stats:
        with self._lock:
            return Stats.from_dict(json.loads(json.dumps(self._stats.to_dict())))

    async def start(self, host: str = "127.0.0.1", port: int = 0, backlog: int = 4096) -> int:
        self._server = await asyncio.start_server(self._connection, host, port, backlog=backlog)
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while (request := await read_request(reader)) is not None:
                if not await self._route(request, writer):
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            writer.transport.abort()
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _route(self, request: Request, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False closes the connection."""
        if request.method == "POST" and request.path.endswith("/chat/completions"):
            if self.capture is not None:
                self.capture.append(request)
            return await self._chat(request.body, writer)
        if request.method == "GET" and request.path.rstrip("/").endswith("/stats/mark"):
            with self._lock:  # the next request starts a new timing window
                self._stats.first_request = 0.0
            return await send(writer, 200, self.stats().to_dict())
        if request.method == "GET" and request.path.rstrip("/").endswith("/stats"):
            return await send(writer, 200, self.stats().to_dict())
        if request.method == "GET" and request.path.endswith("/models"):
            return await send(writer, 200, {"object": "list", "data": []})
        return await send(writer, 404, error_body(f"no route {request.method} {request.path}"))

    async def _chat(self, body: bytes, writer: asyncio.StreamWriter) -> bool:
        try:
            payload = json.loads(body)
            request = ChatRequest(
                str(payload.get("model", "")),
                tuple(payload["messages"]),
                {k: v for k, v in payload.items() if k not in ("model", "messages")},
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return await send(
                writer, 400, error_body(f"bad request body: {exc}", "invalid_request")
            )
        digest = hashlib.sha256(
            json.dumps([request.model, request.messages], sort_keys=True).encode()
        ).hexdigest()
        with self._lock:
            stats = self._stats
            arrival = stats.requests
            stats.requests += 1
            stats.first_request = stats.first_request or time.monotonic()
            stats.in_flight += 1
            stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
            attempt = self._seen[digest]
            self._seen[digest] += 1
            stats.distinct = len(self._seen)
        try:
            wait = self.limit.admit() if self.limit is not None else None  # over R requests/s
            fault = (
                "rate_limit" if wait is not None else self.faults.choose(digest, attempt, arrival)
            )
            if fault is not None:
                with self._lock:
                    self._stats.faults[fault] = self._stats.faults.get(fault, 0) + 1
                return await self._fault(fault, request, writer, wait)
            await self._wait()
            text = self.responder(request)
            with self._lock:
                self._stats.completions += 1
            if (reply := self.reply) is not None:
                return await send_raw(writer, reply.status, reply.body, reply.headers)
            return await send(writer, 200, completion(request, text, self.usage))
        finally:
            with self._lock:
                self._stats.in_flight -= 1
                self._stats.last_answer = time.monotonic()

    async def _wait(self) -> None:
        while self.gate is not None and not self.gate.is_set():  # set from another thread
            await asyncio.sleep(0.005)
        if self.latency > 0:
            await asyncio.sleep(self.latency)

    async def _fault(
        self, kind: str, request: ChatRequest, writer: asyncio.StreamWriter, wait: float | None
    ) -> bool:
        if kind == "drop":
            writer.transport.abort()
            return False
        if kind == "429":
            return await send(writer, 429, error_body("rate limit reached", "rate_limit_exceeded"))
        if kind in ("429-retry-after", "rate_limit"):
            headers = {"Retry-After": f"{self.faults.retry_after if wait is None else wait:g}"}
            return await send(
                writer, 429, error_body("rate limit reached", "rate_limit_exceeded"), headers
            )
        if kind == "timeout":
            await asyncio.sleep(self.faults.hang)
            writer.transport.abort()
            return False
        await self._wait()
        if kind == "trickle":
            body = json.dumps(completion(request, self.responder(request), self.usage)).encode()
            return await send_slowly(writer, 200, body, self.faults.drip)
        if kind == "huge":  # a valid answer whose content is huge_mb MiB of "x"
            marker = "@@pad@@"
            body = json.dumps(completion(request, marker, self.usage)).encode()
            head, _, tail = body.partition(marker.encode())
            return await send_padded(writer, 200, head, int(self.faults.huge_mb * 2**20), tail)
        if kind in ("no-choices", "null-message"):
            broken = completion(request, "", self.usage)
            broken["choices"] = [] if kind == "no-choices" else [{"index": 0, "message": None}]
            return await send(writer, 200, broken)
        if kind == "malformed":
            return await send_raw(writer, 200, b'{"id": "chatcmpl-broken", "choices": [{"inde')
        if kind == "empty":
            return await send(writer, 200, completion(request, "", self.usage))
        return await send(writer, int(kind), error_body(f"injected {kind}", "server_error"))


class Endpoint(str):
    """The base URL (``http://127.0.0.1:<port>/v1``), with the server's counters attached."""

    _server: EndpointServer

    def __new__(cls, url: str, server: EndpointServer) -> Endpoint:
        self = super().__new__(cls, url)
        self._server = server
        return self

    @property
    def url(self) -> str:
        return str(self)

    def stats(self) -> Stats:
        return self._server.stats()


@contextlib.contextmanager
def serve(
    *,
    latency: float = 0.0,
    faults: FaultPlan | None = None,
    responder: Responder = echo,
    usage: tuple[int, int] | None = None,
    port: int = 0,
    backlog: int = 4096,
    gate: threading.Event | None = None,
    capture: list[Request] | None = None,
    limit: RateLimit | None = None,
    reply: Reply | None = None,
) -> Iterator[Endpoint]:
    """Run an endpoint on a background thread for the ``with`` block; yields its base URL.

    ``capture``: a list that receives every chat request as it arrives (headers and body);
    ``reply``: a scripted answer sent instead of every completion.
    """
    server = EndpointServer(
        latency=latency,
        faults=faults,
        responder=responder,
        usage=usage,
        gate=gate,
        capture=capture,
        limit=limit,
        reply=reply,
    )
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="reflex-endpoint", daemon=True)
    thread.start()
    try:
        bound = asyncio.run_coroutine_threadsafe(server.start("127.0.0.1", port, backlog), loop)
        yield Endpoint(f"http://127.0.0.1:{bound.result(timeout=10)}/v1", server)
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m reflex.testing.endpoint", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--backlog", type=int, default=4096)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per answer")
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--fault-kinds", default=",".join(FAULT_KINDS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--retry-after", type=float, default=0.05)
    parser.add_argument("--hang", type=float, default=30.0)
    parser.add_argument("--huge-mb", type=float, default=100.0, help="size of a huge answer")
    parser.add_argument("--max-per-request", type=int, default=None)
    parser.add_argument("--usage", type=int, nargs=2, metavar=("PROMPT", "COMPLETION"))
    parser.add_argument("--rate-limit", type=float, default=None, help="requests/s, 429 above")
    return parser


async def _serve_forever(args: argparse.Namespace) -> None:
    plan = FaultPlan(
        rate=args.fault_rate,
        kinds=[k for k in args.fault_kinds.split(",") if k],
        seed=args.seed,
        retry_after=args.retry_after,
        hang=args.hang,
        huge_mb=args.huge_mb,
        max_per_request=args.max_per_request,
    )
    usage = (args.usage[0], args.usage[1]) if args.usage else None
    limit = RateLimit(args.rate_limit) if args.rate_limit else None
    server = EndpointServer(latency=args.latency, faults=plan, usage=usage, limit=limit)
    port = await server.start(args.host, args.port, args.backlog)
    # The one line a parent process reads to learn the port (library code never prints).
    sys.stdout.write(f"listening on http://{args.host}:{port}/v1\n")
    sys.stdout.flush()
    try:
        await asyncio.Event().wait()
    finally:
        await server.close()


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m reflex.testing.endpoint``: serve until interrupted."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve_forever(_parser().parse_args(argv)))


if __name__ == "__main__":
    main()
