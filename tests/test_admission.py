"""Admission (reflex.models.admission): the bounds, the drain, loop changes; and the per-call
overhead that grows with the number of calls handed over at once (issue 21)."""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Mapping, Sequence

import pytest

from reflex.models import providers
from reflex.models.admission import Admission, may_leave
from reflex.models.client import ClientSettings, Completion, ModelSpec, ProviderClient, load_litellm
from reflex.models.offload import OffloadPool
from reflex.models.runner import LoopRunner
from reflex.models.usage import Role
from reflex.testing import FakeModel


def test_calls_inside_complete_are_bounded(runner: LoopRunner) -> None:
    client = ProviderClient(ClientSettings(max_workers=2))
    inside, peak = 0, 0

    async def counting(
        spec: ModelSpec, messages: Sequence[Mapping[str, str]], role: Role
    ) -> Completion:
        nonlocal inside, peak
        inside += 1
        peak = max(peak, inside)
        await asyncio.sleep(0.001)
        inside -= 1
        return Completion("x", 1, 1, None, cached=False, attempts=1)

    client._complete = counting  # type: ignore[method-assign]
    spec = ModelSpec("fake/m")

    async def many() -> list[Completion]:
        calls = [client.complete(spec, [{"role": "user", "content": f"q{i}"}]) for i in range(100)]
        return list(await asyncio.gather(*calls))

    assert len(runner.run(many())) == 100
    assert peak == 2 * 2 + 16


def test_litellms_objects_are_kept_out_of_garbage_collections() -> None:
    load_litellm()
    assert gc.get_freeze_count() > 100_000


# The invariants of reflex.models.admission (its module docstring).


def test_the_drain_wakes_the_waiting_call_without_polling(
    runner: LoopRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call that ends wire mode waits for the wire calls on an Event: it never sleeps to poll,
    and it gets its slot as soon as the last wire call is done."""
    admission = Admission(2, wire=True)
    sleeps: list[float] = []
    real_sleep = asyncio.sleep

    async def recorded(delay: float, result: object = None) -> object:
        sleeps.append(delay)
        return await real_sleep(delay, result)

    async def scenario() -> list[str]:
        order: list[str] = []
        release = asyncio.Event()

        async def on_the_wire(name: str) -> None:
            async with admission.slot(wire_ok=True) as gate:
                assert gate == (id(admission), 2)
                await release.wait()
                order.append(name)

        async def here() -> None:
            async with admission.slot(wire_ok=False) as gate:
                assert gate is None and admission.wire_calls == 0
                order.append("here")

        wire = [asyncio.ensure_future(on_the_wire(f"w{i}")) for i in range(3)]
        for _ in range(3):
            await real_sleep(0)  # let the wire calls be admitted
        assert admission.wire_calls == 3
        monkeypatch.setattr(asyncio, "sleep", recorded)
        waiting = asyncio.ensure_future(here())
        for _ in range(5):
            await real_sleep(0)
        assert not admission.wire and not waiting.done()  # ended the mode, waits for the drain
        release.set()
        await asyncio.gather(*wire, waiting)
        return order

    assert runner.run(scenario()) == ["w0", "w1", "w2", "here"]
    assert sleeps == []  # the old drain slept 10 ms per look


def test_wire_mode_is_one_way_and_admits_no_call_once_off(runner: LoopRunner) -> None:
    admission = Admission(3, wire=True)

    async def scenario() -> list[object]:
        gates: list[object] = []
        for wire_ok in (True, False, True):
            async with admission.slot(wire_ok=wire_ok) as gate:
                gates.append(gate)
        return gates

    assert runner.run(scenario()) == [(id(admission), 3), None, None]
    assert not admission.wire


def test_a_loop_change_gives_new_gates_with_the_same_bound() -> None:
    """asyncio.run twice: the second loop gets gates of its own (no RuntimeError from a
    primitive bound to the first loop) that bound the calls exactly as the first did."""
    admission = Admission(2, wire=False)

    async def peak() -> int:
        inside, top = 0, 0

        async def one() -> None:
            nonlocal inside, top
            async with admission.entry(), admission.slot(wire_ok=False):
                inside += 1
                top = max(top, inside)
                await asyncio.sleep(0)
                inside -= 1

        await asyncio.gather(*(one() for _ in range(12)))  # 10 wait: the gates bind to the loop
        return top

    assert asyncio.run(peak()) == 2
    assert asyncio.run(peak()) == 2  # reusing the first loop's semaphores would raise here
    assert admission.entry_limit == 2 * 2 + 16 and admission.spare == 4


def test_a_serial_providers_calls_go_one_at_a_time_in_arrival_order(
    runner: LoopRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(providers, "_SERIAL", {"serial"})  # as register_provider(serial=True)
    admission = Admission(4, wire=False)
    spec = ModelSpec("serial/tiny")

    async def scenario() -> list[int]:
        order: list[int] = []
        inside = 0

        async def one(i: int) -> None:
            nonlocal inside
            async with admission.in_order(spec), admission.slot(wire_ok=False):
                inside += 1
                assert inside == 1
                await asyncio.sleep(0)
                order.append(i)
                inside -= 1

        await asyncio.gather(*(one(i) for i in range(6)))
        return order

    assert runner.run(scenario()) == list(range(6))


def test_a_serial_provider_with_two_lanes_has_two_calls_inside_in_arrival_order(
    runner: LoopRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(providers, "_SERIAL", {"serial"})
    monkeypatch.setattr(providers, "_LANES", {})
    providers.set_lanes("serial", 2)  # as the embedded model's --local-workers 2
    admission = Admission(4, wire=False)
    spec = ModelSpec("serial/tiny")

    async def scenario() -> tuple[list[int], int]:
        entered: list[int] = []
        inside = top = 0

        async def one(i: int) -> None:
            nonlocal inside, top
            async with admission.in_order(spec), admission.slot(wire_ok=False):
                entered.append(i)
                inside += 1
                top = max(top, inside)
                await asyncio.sleep(0)
                await asyncio.sleep(0)
                inside -= 1

        await asyncio.gather(*(one(i) for i in range(6)))
        return entered, top

    assert runner.run(scenario()) == (list(range(6)), 2)
    assert providers.lanes("other") == 1
    with pytest.raises(ValueError, match="lanes must be >= 1"):
        providers.set_lanes("serial", 0)


def test_the_offload_check_starts_no_client_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asking whether a call may go to a client process answers only: the pool is started by
    the client's explicit step, never by the check (it used to start it)."""
    monkeypatch.setenv("REFLEX_LEAN_TRANSPORT", "0")  # else openai/ stays on the lean path
    monkeypatch.delitem(sys.modules, "litellm", raising=False)  # no callback can be listening
    shared = OffloadPool._shared
    client = ProviderClient(ClientSettings(max_workers=2, processes=5))
    spec = ModelSpec("openai/task", api_base="http://127.0.0.1:9/v1")
    assert may_leave(spec, routed=False)
    assert client._offloadable(spec) and client._offloadable(spec)
    assert not client._offloaded(spec)
    assert client.offload is None and OffloadPool._shared is shared
    FakeModel(lambda request: "here").install()
    assert not may_leave(ModelSpec("fake/task"), routed=False)  # in-process provider
    assert not may_leave(spec, routed=True)  # the Router lives here
