"""Every model call goes through here: LiteLLM (imported lazily), cache, retries, usage, limits.

``import litellm`` costs 5-9 s, so it happens on the first call, never at ``import reflex``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from reflex.config import default
from reflex.errors import (
    BudgetExhausted,
    ConfigurationError,
    ProviderError,
    TransientProviderError,
)
from reflex.models import providers
from reflex.models.body_limit import DEFAULT_MAX_RESPONSE_MB, response_limit
from reflex.models.cache import CachedResponse, ResponseCache, cache_key
from reflex.models.deadline import call_deadline, within_deadline
from reflex.models.litellm_call import Completion, call_once, litellm_listens
from reflex.models.providers import register_provider
from reflex.models.retry import (
    RetryPolicy,
    first_line,
    is_rate_limit,
    is_transient,
    permanent_message,
)
from reflex.models.spec import ModelSpec, parse_model
from reflex.models.target import selectors
from reflex.models.usage import Ledger, Role, priced
from reflex.models.wire import lean_candidate

if TYPE_CHECKING:
    from reflex.models.offload import OffloadPool
    from reflex.models.router import ModelRouter

__all__ = [
    "Completion",
    "ModelSpec",
    "ProviderClient",
    "load_litellm",
    "parse_model",
    "register_provider",
]

logger = logging.getLogger(__name__)


def load_litellm() -> ModuleType:
    """Import litellm once, offline-friendly and quiet, with our custom providers installed."""
    if not providers.litellm_loaded():
        from reflex.models.local import register_local_provider

        if not providers.is_custom("local"):
            register_local_provider()
    return providers.load_litellm()


def client_pool(processes: int) -> OffloadPool | None:
    """The shared pool of ``processes`` client processes (``reflex.models.offload``), or None."""
    if processes < 1:
        return None
    from reflex.models.offload import OffloadPool

    return OffloadPool.shared(processes)


# (model, attempt, error, delay, role): a retry about to be made.
RetryListener = Callable[[str, int, BaseException, float, Role], None]


class ProviderClient:
    """Run-wide client: one concurrency limit, one cache, one ledger for every call."""

    def __init__(
        self,
        *,
        max_workers: int = default("max_workers"),
        cache: ResponseCache | None = None,
        cache_namespace: str = default("cache_namespace"),
        ledger: Ledger | None = None,
        retry: RetryPolicy | None = None,
        seed: int = 0,
        on_retry: RetryListener | None = None,
        owner: str | None = None,
        offload: OffloadPool | None = None,
        processes: int = default("client_processes"),
        router: ModelRouter | None = None,
        prices: Mapping[str, tuple[float, float]] | None = None,
        max_response_mb: float = DEFAULT_MAX_RESPONSE_MB,
    ) -> None:
        if max_workers < 1:
            raise ConfigurationError(f"max_workers must be >= 1, got {max_workers}")
        self.max_workers = max_workers
        self.cache = cache
        self.namespace = cache_namespace
        self.ledger = ledger or Ledger()
        # USD per million (input, output) tokens by model: replaces LiteLLM's price (--price).
        self.prices = dict(prices or {})
        self.retry = retry or RetryPolicy()
        self._rng = random.Random(seed)
        self._on_retry = on_retry
        self._semaphore: asyncio.Semaphore | None = None
        self._semaphore_loop: asyncio.AbstractEventLoop | None = None
        self._serial: dict[str, asyncio.Lock] = {}  # per serial provider, for this loop
        # ``owner`` (the run id) marks what this run paid for, so a resumed run that replays
        # its history from the cache counts those calls exactly once, as the original did.
        self.owner = owner
        self._seen: set[str] = set()
        self._inflight: dict[str, asyncio.Future[Completion]] = {}
        # Run-wide back-off: a 429 pauses every call of the run (loop time), not just its own.
        self._resume_at = 0.0
        self.backoff_waits = 0  # calls that waited for the shared back-off
        self._last_answer: float | None = None  # monotonic time of the run's latest answer
        # Seconds left to the work under way before its time budget's deadline (None: no
        # limit), set by the run around each budgeted step: a retry never waits past it.
        self.time_left: Callable[[], float | None] | None = None
        # Client processes for LiteLLM's per-call CPU (models.offload): ``offload``, or a shared
        # pool of ``processes`` started by the first call that can leave this process.
        self.offload = offload
        self._processes = processes if offload is None else 0
        self._wire = offload is not None or processes > 0  # slots held there, on the wire only
        self._wire_calls = 0  # calls admitted under that rule and not yet done
        self._admission: asyncio.Semaphore | None = None
        self._entry: asyncio.Semaphore | None = None  # calls inside ``complete`` (see there)
        self._spare = max(4, -(-max_workers // 2))  # calls admitted beyond max_workers there
        self.router = router  # models named in a LiteLLM Router config go through it
        # An answer over this many MiB fails its call (reflex.models.body_limit).
        self.max_response_mb = max_response_mb

    def _limit(self, admission: bool = False) -> asyncio.Semaphore:
        # Created lazily, and again for a new loop: a semaphore that ever had to wait is bound to
        # its loop, and reusing it from another loop (asyncio.run twice) raises RuntimeError.
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._semaphore_loop is not loop:
            self._semaphore = asyncio.Semaphore(self.max_workers)
            self._admission = asyncio.Semaphore(self.max_workers + self._spare)
            self._entry = asyncio.Semaphore(2 * self.max_workers + 16)
            self._serial = {}
            self._semaphore_loop = loop
        if admission:
            assert self._admission is not None
            return self._admission
        return self._semaphore

    def _in_order(self, spec: ModelSpec) -> contextlib.AbstractAsyncContextManager[None]:
        """A FIFO lock for a serial provider's calls (taken before a worker slot), else nothing."""
        provider = spec.model.partition("/")[0]
        if not providers.is_serial(provider):
            return contextlib.nullcontext()
        self._limit()  # resets the locks when the loop changed
        return self._serial.setdefault(provider, asyncio.Lock())

    def key(self, spec: ModelSpec, messages: Sequence[Mapping[str, Any]]) -> str:
        """The cache key: the spec, the messages, and what outside the spec selects the answer
        (the endpoint an environment variable chose...: ``reflex.models.target.selectors``)."""
        params = spec.cache_params()
        params.update(selectors(spec))
        return cache_key(self.namespace, spec.model, params, messages)

    def would_pay(self, spec: ModelSpec, messages: Sequence[Mapping[str, Any]]) -> bool:
        """Whether ``complete`` would count a paid call (a miss, or a replay of our own call)."""
        key = self.key(spec, messages)
        hit = self.cache.get(key) if self.cache is not None else None
        return hit is None or self._replays(key, hit)

    def _replays(self, key: str, hit: CachedResponse) -> bool:
        return self.owner is not None and hit.owner == self.owner and key not in self._seen

    async def complete(
        self, spec: ModelSpec, messages: Sequence[Mapping[str, Any]], role: Role = "task"
    ) -> Completion:
        """One answer: from the cache, from an identical call in flight, or from the provider.

        At most ``2 * max_workers + 16`` calls are inside at once: an evaluation hands over all
        its rows at once, and without this bound the loop ran every row's cache lookup and
        bookkeeping (~0.2 ms each, 0.5-1.5 s for 2,300 rows) before the first request could
        connect. Admitted calls still wait for one of the ``max_workers`` slots.
        """
        async with self._gate():
            return await self._complete(spec, messages, role)

    def _gate(self) -> asyncio.Semaphore:
        self._limit()  # new loop: new semaphores
        assert self._entry is not None
        return self._entry

    async def _complete(
        self, spec: ModelSpec, messages: Sequence[Mapping[str, Any]], role: Role
    ) -> Completion:
        key = self.key(spec, messages)
        if key in self._inflight:  # the same request is already being paid for: share it
            shared = await asyncio.shield(self._inflight[key])
            self.ledger.add_cache_hit(role, shared.cost)
            return _as_cached(shared)
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            if self._replays(key, hit):
                self.ledger.add_call(role, hit.prompt_tokens, hit.completion_tokens, hit.cost)
            else:
                self.ledger.add_cache_hit(role, hit.cost)
            self._seen.add(key)
            return Completion(
                hit.text,
                hit.prompt_tokens,
                hit.completion_tokens,
                hit.cost,
                cached=True,
                attempts=0,
            )
        return await self._pay(key, spec, messages, role)

    async def _pay(
        self, key: str, spec: ModelSpec, messages: Sequence[Mapping[str, Any]], role: Role
    ) -> Completion:
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            async with self._in_order(spec), self._slot(spec) as gate:
                completion = await self._call_with_retries(spec, messages, role, gate)
            completion = priced(completion, self.prices.get(spec.model))
            self.ledger.add_call(
                role, completion.prompt_tokens, completion.completion_tokens, completion.cost
            )
            if completion.deployment is not None:
                self.ledger.add_deployment(role, completion.deployment)
            if self.cache is not None:
                # Still in ``_inflight`` until the row is committed: an identical call arriving
                # meanwhile shares this one instead of missing the cache and paying again.
                await self.cache.aput(
                    key,
                    CachedResponse(
                        completion.text,
                        completion.prompt_tokens,
                        completion.completion_tokens,
                        completion.cost,
                        self.owner,
                    ),
                )
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: nobody may be waiting on it
            raise
        finally:
            del self._inflight[key]
        self._seen.add(key)
        future.set_result(completion)
        return completion

    async def _call_with_retries(
        self,
        spec: ModelSpec,
        messages: Sequence[Mapping[str, Any]],
        role: Role,
        gate: tuple[int, int] | None = None,
    ) -> Completion:
        attempt = 0
        while True:
            attempt += 1
            await self._respect_backoff()
            try:
                completion = await self._attempt(spec, messages, attempt, gate)
                self._last_answer = time.monotonic()
                return completion
            except Exception as exc:  # classified right below: permanent or transient
                if not is_transient(exc):
                    raise ProviderError(
                        permanent_message(spec.model, exc, spec.api_base), model=spec.model
                    ) from exc
                since = None if self._last_answer is None else time.monotonic() - self._last_answer
                if self.retry.gives_up(attempt, since):
                    raise TransientProviderError(
                        f"{spec.model}: still failing after {attempt} attempts: "
                        f"{first_line(exc, spec.api_base)}; check the provider status or lower "
                        "--max-workers",
                        model=spec.model,
                    ) from exc
                delay = self.retry.delay(attempt, exc, self._rng)
                self._before_deadline(spec, exc, delay)
                self.ledger.add_retry(role)
                if self._on_retry is not None:
                    self._on_retry(spec.model, attempt, exc, delay, role)
                logger.info(
                    "retrying %s in %.2fs after %s",
                    spec.model,
                    delay,
                    first_line(exc, spec.api_base),
                )
                if is_rate_limit(exc) and not self._routed(spec):  # the whole run slows down
                    resume = asyncio.get_running_loop().time() + delay
                    self._resume_at = max(self._resume_at, resume)
                else:
                    await asyncio.sleep(delay)

    def _before_deadline(self, spec: ModelSpec, exc: BaseException, delay: float) -> None:
        """BudgetExhausted now when the retry would wait past the time budget's deadline: the
        run ends its step (and keeps its final) instead of idling until the deadline."""
        left = self.time_left() if self.time_left is not None else None
        if left is not None and delay >= left:
            raise BudgetExhausted(
                f"time budget: {spec.model} failed ({first_line(exc, spec.api_base)}) and its "
                f"retry would wait {delay:.3g} s, past the deadline of this step in "
                f"{max(left, 0.0):.3g} s (raise --max-seconds to continue)"
            )

    async def _attempt(
        self,
        spec: ModelSpec,
        messages: Sequence[Mapping[str, Any]],
        attempt: int,
        gate: tuple[int, int] | None,
    ) -> Completion:
        """One attempt, wherever it runs, bounded by its total deadline (models.deadline)."""
        with response_limit(self.max_response_mb):
            return await self._attempt_capped(spec, messages, attempt, gate)

    async def _attempt_capped(
        self,
        spec: ModelSpec,
        messages: Sequence[Mapping[str, Any]],
        attempt: int,
        gate: tuple[int, int] | None,
    ) -> Completion:
        if self._routed(spec):
            assert self.router is not None
            litellm = load_litellm()  # the first import takes seconds: not inside the deadline
            return await within_deadline(
                self.router.call(litellm, spec, messages, attempt), call_deadline(spec)
            )
        offload = self.offload
        if offload is not None and gate is not None:
            if offload.alive():
                return await offload.call(spec, messages, attempt, gate, call_deadline(spec))
            self._wire = False  # no client process left: this call holds a slot here
            async with self._limit():
                return await self._here(spec, messages, attempt)
        if offload is not None and self._offloaded(spec):
            return await offload.call(spec, messages, attempt, None, call_deadline(spec))
        return await self._here(spec, messages, attempt)

    async def _here(
        self, spec: ModelSpec, messages: Sequence[Mapping[str, Any]], attempt: int
    ) -> Completion:
        litellm = load_litellm()  # the first import takes seconds: not inside the deadline
        return await within_deadline(
            call_once(litellm, spec, messages, attempt), call_deadline(spec)
        )

    def _offloadable(self, spec: ModelSpec) -> bool:
        """Whether this call may run in a client process (see :mod:`reflex.models.offload`)."""
        if self.offload is None and not self._processes:
            return False
        if self._routed(spec):
            return False  # the Router (and its pacing) lives in this process
        if providers.is_custom(spec.model.partition("/")[0]):
            return False  # in-process providers live in this process
        if lean_candidate(spec):
            return False  # the lean transport here costs less CPU than a client process
        from reflex.models.offload import OffloadPool

        if not OffloadPool.portable(spec):
            return False  # a decoding option that cannot be handed to another process
        litellm = sys.modules.get("litellm")  # not imported here: nobody registered a callback
        if litellm is not None and litellm_listens(litellm):
            return False
        if self.offload is None:  # the first call that can go: start the processes now
            self.offload = client_pool(self._processes)
        return True

    def _offloaded(self, spec: ModelSpec) -> bool:
        """Whether a call that holds a whole-call slot runs in a client process now."""
        return self._offloadable(spec) and self.offload is not None and self.offload.ready()

    @contextlib.asynccontextmanager
    async def _slot(self, spec: ModelSpec) -> AsyncIterator[tuple[int, int] | None]:
        """The call's share of ``max_workers``: a gate for client processes, or a slot here.

        While every call of this client goes to client processes, they hold the slots, only
        on the wire, and ``_spare`` more calls than ``max_workers`` are admitted (being built,
        waiting for a slot or being parsed; measured best at 4-8 for 8 slots and about half
        of 64, where more keep the processes' loops from reading responses in time). The first
        call made here ends that for good, once the calls in client processes are done.
        """
        if self._wire and self._offloadable(spec) and self.offload and self.offload.alive():
            async with self._limit(admission=True):
                self._wire_calls += 1
                try:
                    yield (id(self), self.max_workers)
                finally:
                    self._wire_calls -= 1
            return
        self._wire = False
        while self._wire_calls:  # no slot here until the client processes hold none
            await asyncio.sleep(0.01)
        async with self._limit():
            yield None

    def _routed(self, spec: ModelSpec) -> bool:
        """Whether ``spec`` goes through the Router (a 429 there cools one deployment down)."""
        return self.router is not None and self.router.group(spec) is not None

    async def _respect_backoff(self) -> None:
        loop = asyncio.get_running_loop()
        waited = False
        while (wait := self._resume_at - loop.time()) > 0:
            waited = True
            await asyncio.sleep(wait)
        self.backoff_waits += waited


def _as_cached(completion: Completion) -> Completion:
    return Completion(
        completion.text,
        completion.prompt_tokens,
        completion.completion_tokens,
        completion.cost,
        cached=True,
        attempts=0,
    )
