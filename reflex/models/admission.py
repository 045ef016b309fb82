"""Admission: when one of a client's calls may start, and how many are under way at once.

:class:`Admission` is the one place a :class:`reflex.models.client.ProviderClient` waits before
it calls a provider. Its invariants:

1. **Entry.** At most ``2 * max_workers + 16`` calls are inside ``complete`` at once (cache
   lookup and bookkeeping included): an evaluation hands over all its rows at once, and without
   this bound the loop ran every row's lookup (~0.2 ms each) before the first request connected.
2. **In flight.** At most ``max_workers`` requests are in flight. In *here* mode each paid call
   holds one of ``max_workers`` slots for the whole call (its retries and back-off waits
   included). In *wire* mode (client processes, :mod:`reflex.models.offload`) up to
   ``max_workers + spare`` calls are admitted (being built, waiting or being parsed), and the
   client processes hold the ``max_workers`` slots, split between them, each only while a
   request is on the wire; the call carries its :data:`Gate` there.
3. **Order.** Waiters are served first come, first served (asyncio's semaphores and locks are
   FIFO). A serial provider's calls (``providers.is_serial``) also take one of that provider's
   ``providers.lanes`` (1 unless set: one at a time) before a slot, in the order they arrived.
4. **One way.** Wire mode holds from the start when client processes are configured and ends,
   for the client's lifetime, with the first call that holds a slot here (a call that cannot
   leave the process, or one whose client processes are gone). Such a call first waits until
   the calls already admitted to the wire are done (the **drain**): no polling, the last one to
   leave sets an :class:`asyncio.Event`. Once the mode is off no call is admitted to the wire,
   so the drain ends.
5. **Loop change.** The gates (semaphores, locks, the drain event and the count of wire calls)
   belong to one event loop: the first call on another loop (``asyncio.run`` twice) gets new
   ones with the same bounds, since a primitive that ever waited is bound to its loop. The mode
   is the client's and is kept.
6. **Pure predicates.** :func:`may_leave` and the properties only answer; starting the client
   processes is the client's explicit step (``ProviderClient._start_pool``), never a check's.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from reflex.models import providers
from reflex.models.litellm_call import litellm_listens
from reflex.models.offload_protocol import portable
from reflex.models.spec import ModelSpec
from reflex.models.wire import lean_candidate

__all__ = ["Admission", "Gate", "may_leave"]

# (client key, max_workers): the slots a client process counts a wire call against.
Gate = tuple[int, int]


def may_leave(spec: ModelSpec, *, routed: bool) -> bool:
    """Whether a call with ``spec`` may run in a client process (no side effect)."""
    if routed:
        return False  # the Router (and its pacing) lives in this process
    if providers.is_custom(spec.model.partition("/")[0]):
        return False  # in-process providers live in this process
    if lean_candidate(spec):
        return False  # the lean transport here costs less CPU than a client process
    if not portable(dict(spec.extra)):
        return False  # a decoding option that cannot be handed to another process
    litellm = sys.modules.get("litellm")  # not imported here: nobody registered a callback
    return litellm is None or not litellm_listens(litellm)


@dataclass
class _Gates:
    """One event loop's gates (invariant 5)."""

    loop: asyncio.AbstractEventLoop
    slots: asyncio.Semaphore
    wire: asyncio.Semaphore
    entry: asyncio.Semaphore
    serial: dict[tuple[str, int], asyncio.Semaphore] = field(default_factory=dict)
    wire_calls: int = 0  # calls admitted to the wire rule and not yet done
    drained: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.drained.set()


class Admission:
    """The gates of one client: see the module docstring for what they guarantee."""

    def __init__(self, max_workers: int, *, wire: bool) -> None:
        self.max_workers = max_workers
        # Calls admitted beyond max_workers in wire mode: measured best at 4-8 for 8 slots and
        # about half of 64, where more keep the processes' loops from reading responses in time.
        self.spare = max(4, -(-max_workers // 2))
        self.entry_limit = 2 * max_workers + 16
        self._wire = wire
        self._gates: _Gates | None = None

    @property
    def wire(self) -> bool:
        """Whether the client is in wire mode (invariant 4: once off, off for good)."""
        return self._wire

    @property
    def wire_calls(self) -> int:
        """Calls of the current loop admitted to the wire rule and not yet done."""
        gates = self._gates
        return 0 if gates is None else gates.wire_calls

    def _current(self) -> _Gates:
        loop = asyncio.get_running_loop()
        gates = self._gates
        if gates is None or gates.loop is not loop:
            gates = self._gates = _Gates(
                loop,
                slots=asyncio.Semaphore(self.max_workers),
                wire=asyncio.Semaphore(self.max_workers + self.spare),
                entry=asyncio.Semaphore(self.entry_limit),
            )
        return gates

    def entry(self) -> asyncio.Semaphore:
        """The bound on calls inside ``complete`` (invariant 1)."""
        return self._current().entry

    def in_order(self, spec: ModelSpec) -> contextlib.AbstractAsyncContextManager[None]:
        """A serial provider's FIFO lanes (taken before a slot), else nothing (invariant 3)."""
        provider = spec.model.partition("/")[0]
        if not providers.is_serial(provider):
            return contextlib.nullcontext()
        n = providers.lanes(provider)
        return self._current().serial.setdefault((provider, n), asyncio.Semaphore(n))

    @contextlib.asynccontextmanager
    async def slot(self, *, wire_ok: bool) -> AsyncIterator[Gate | None]:
        """A call's share of ``max_workers``: a :data:`Gate` while in wire mode and ``wire_ok``
        (the call may go to a live client process), else a slot here after the drain."""
        gates = self._current()
        if self._wire and wire_ok:
            gates.wire_calls += 1  # counted from here: the drain also waits for queued calls
            gates.drained.clear()
            try:
                async with gates.wire:
                    yield (id(self), self.max_workers)
            finally:
                gates.wire_calls -= 1
                if not gates.wire_calls:
                    gates.drained.set()
            return
        self._wire = False
        while gates.wire_calls:  # no slot here until the client processes hold none
            await gates.drained.wait()
        async with gates.slots:
            yield None

    def fallback(self) -> asyncio.Semaphore:
        """A slot here for a wire call whose client processes are gone; ends wire mode."""
        self._wire = False
        return self._current().slots
