"""The wire gate (reflex/inflight.py, reflex/_wire.py): ``max_workers`` requests on the wire."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from reflex._wire import GatedTransport
from reflex.endpoint import serve
from reflex.inflight import Ticket, ticket_var
from reflex.providers import Completion, ModelSpec, ProviderClient, load_litellm
from reflex.runner import LoopRunner


@pytest.fixture(scope="module")
def runner() -> Iterator[LoopRunner]:
    loop = LoopRunner()
    yield loop
    loop.close()


class Body(httpx.AsyncByteStream):
    def __init__(self) -> None:
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b'{"ok": true}'

    async def aclose(self) -> None:
        self.closed = True


class Inner:
    """A transport that records how many gate slots were free while it was sending."""

    def __init__(self, limit: asyncio.Semaphore | None = None, fail: bool = False) -> None:
        self.limit, self.fail = limit, fail
        self.free_while_sending: list[int] = []
        self.body = Body()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.limit is not None:
            self.free_while_sending.append(self.limit._value)
        if self.fail:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, stream=self.body)

    async def aclose(self) -> None:
        pass


def _send(transport: GatedTransport, ticket: Ticket | None) -> Any:
    async def go() -> httpx.Response:
        token = ticket_var.set(ticket)
        try:
            response: httpx.Response = await transport.handle_async_request(
                httpx.Request("POST", "http://x/")
            )
            return response
        finally:
            ticket_var.reset(token)

    return go()


def test_a_slot_is_held_from_send_until_the_body_is_read(runner: LoopRunner) -> None:
    async def go() -> tuple[list[int], int, int, bool]:
        limit = asyncio.Semaphore(2)
        inner = Inner(limit)
        ticket = Ticket(limit, held=False)
        response = await _send(GatedTransport(inner), ticket)
        during = limit._value
        await response.aread()
        return inner.free_while_sending, during, limit._value, ticket.seen

    free_while_sending, during, after, seen = runner.run(go())
    assert free_while_sending == [1] and during == 1  # one of two slots taken while out
    assert after == 2 and seen  # released once the body was read, and the call marked wired


def test_a_held_ticket_or_no_ticket_passes_through(runner: LoopRunner) -> None:
    async def go() -> tuple[list[int], bool]:
        limit = asyncio.Semaphore(1)
        inner = Inner(limit)
        held = Ticket(limit, held=True)
        await (await _send(GatedTransport(inner), held)).aread()
        await (await _send(GatedTransport(inner), None)).aread()
        return inner.free_while_sending, held.seen

    free, seen = runner.run(go())
    assert free == [1, 1] and seen  # never acquired: the caller's slot (or no run) governs


def test_a_failed_send_or_a_closed_body_gives_the_slot_back(runner: LoopRunner) -> None:
    async def go() -> tuple[int, int]:
        limit = asyncio.Semaphore(1)
        with pytest.raises(httpx.ConnectError):
            await _send(GatedTransport(Inner(limit, fail=True)), Ticket(limit, held=False))
        after_failure = limit._value
        response = await _send(GatedTransport(Inner(limit)), Ticket(limit, held=False))
        await response.aclose()  # closed unread (e.g. the caller gave up)
        await response.aclose()  # twice: released once, not twice
        return after_failure, limit._value

    assert runner.run(go()) == (1, 1)


def _calls(client: ProviderClient, url: str, n: int, tag: str) -> Any:
    spec = ModelSpec("openai/gate", api_base=url, timeout=30.0, extra={"api_key": "sk-none"})

    async def go() -> list[Completion]:
        asks = (client.complete(spec, [{"role": "user", "content": f"{tag}{i}"}]) for i in range(n))
        return list(await asyncio.gather(*asks))

    return go()


def test_max_workers_is_the_number_of_requests_on_the_wire(runner: LoopRunner) -> None:
    load_litellm()
    with serve(latency=0.05) as url:
        client = ProviderClient(max_workers=3)
        outs = runner.run(_calls(client, url, 24, "wire"))
        stats = url.stats()
    assert [o.text for o in outs] == [f"wire{i}" for i in range(24)]
    assert stats.peak_in_flight == 3  # the limit is reached and never exceeded
    assert client._wired == {"openai/gate": True}  # the first call taught the client the path


def test_a_path_the_gate_does_not_see_holds_its_slot_for_the_whole_call(
    runner: LoopRunner, fake_model: Any
) -> None:
    client = ProviderClient(max_workers=2)
    free_during_calls: list[int] = []

    def respond(request: Any) -> str:  # runs inside LiteLLM's call to the custom provider
        assert client._semaphore is not None
        free_during_calls.append(client._semaphore._value)
        return "ok"

    fake_model.responder = respond
    spec = ModelSpec("fake/model")

    async def go() -> None:
        asks = (client.complete(spec, [{"role": "user", "content": f"q{i}"}]) for i in range(4))
        await asyncio.gather(*asks)

    runner.run(go())
    assert client._wired == {"fake/model": False}
    # every call held a slot throughout (never both free), and two calls at most ran at once
    assert len(free_during_calls) == 4 and set(free_during_calls) <= {0, 1}


def test_the_gate_can_be_switched_off() -> None:
    code = (
        "from reflex.providers import load_litellm; import litellm;"
        "load_litellm(); print(litellm.aclient_session is None)"
    )
    env = {**os.environ, "REFLEX_WIRE_GATE": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "True", out.stderr
