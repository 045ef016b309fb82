"""Every model call goes through here: LiteLLM (imported lazily), cache, retries, usage, limits.

``import litellm`` costs 5-9 s, so it happens on the first call, never at ``import reflex``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from reflex.errors import BudgetExhausted, ProviderError, TransientProviderError
from reflex.models import providers
from reflex.models.admission import Admission, Gate, may_leave
from reflex.models.body_limit import response_limit
from reflex.models.cache import CachedResponse, ResponseCache, cache_key
from reflex.models.client_settings import ClientSettings
from reflex.models.deadline import call_deadline, within_deadline
from reflex.models.litellm_call import Completion, call_once
from reflex.models.providers import register_provider
from reflex.models.retry import (
    first_line,
    is_rate_limit,
    is_transient,
    permanent_message,
)
from reflex.models.spec import ModelSpec, parse_model
from reflex.models.target import selectors
from reflex.models.usage import Ledger, Role, priced

if TYPE_CHECKING:
    from reflex.models.offload import OffloadPool
    from reflex.models.router import ModelRouter

__all__ = [
    "ClientSettings",
    "Completion",
    "ModelSpec",
    "ProviderClient",
    "ReplayHook",
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


class ReplayHook(Protocol):
    """Which cache hits replay a call this run paid for (``reflex.run.replay.CallReplay``)."""

    @property
    def owner(self) -> str | None:
        """The run id written on each row this client pays for (None: nobody's)."""
        ...

    def counts_as_paid(self, key: str, row_owner: str | None) -> bool: ...

    def answered(self, key: str) -> None: ...


class _NoReplay:
    """No run: no row is owned, every hit is a cache hit."""

    owner = None

    def counts_as_paid(self, key: str, row_owner: str | None) -> bool:
        return False

    def answered(self, key: str) -> None:
        return None


class ProviderClient:
    """Run-wide client: one admission (``reflex.models.admission``), one cache, one ledger."""

    def __init__(
        self,
        settings: ClientSettings | None = None,
        *,
        cache: ResponseCache | None = None,
        ledger: Ledger | None = None,
        on_retry: RetryListener | None = None,
        replay: ReplayHook | None = None,
        offload: OffloadPool | None = None,
        router: ModelRouter | None = None,
    ) -> None:
        self.settings = settings = settings or ClientSettings()
        self.cache = cache
        self.ledger = ledger or Ledger()
        self.retry = settings.retry
        self._rng = random.Random(settings.seed)
        self._on_retry = on_retry
        # Which hits replay this run's own calls (reflex.run.replay): counted as paid, once.
        self.replay: ReplayHook = replay or _NoReplay()
        self._inflight: dict[str, asyncio.Future[Completion]] = {}
        # Run-wide back-off: a 429 pauses every call of the run (loop time), not just its own.
        self._resume_at = 0.0
        self.backoff_waits = 0  # calls that waited for the shared back-off
        self._last_answer: float | None = None  # monotonic time of the run's latest answer
        # Seconds left to the work under way before its time budget's deadline (None: no
        # limit), set by the run around each budgeted step: a retry never waits past it.
        self.time_left: Callable[[], float | None] | None = None
        self.offload = offload  # client processes: given, or started by ``_start_pool``
        self._processes = settings.processes if offload is None else 0
        self.admission = Admission(
            settings.max_workers, wire=offload is not None or settings.processes > 0
        )
        self.router = router  # models named in a LiteLLM Router config go through it
        self._local_sized = False  # set_workers(settings.local_workers) done

    @property
    def max_workers(self) -> int:
        return self.settings.max_workers

    def key(self, spec: ModelSpec, messages: Sequence[Mapping[str, object]]) -> str:
        """The cache key: the spec, the messages, and what outside the spec selects the answer
        (the endpoint an environment variable chose...: ``reflex.models.target.selectors``)."""
        params = spec.cache_params()
        params.update(selectors(spec))
        return cache_key(self.settings.cache_namespace, spec.model, params, messages)

    def would_pay(self, spec: ModelSpec, messages: Sequence[Mapping[str, object]]) -> bool:
        """Whether ``complete`` would count a paid call (a miss, or a replay of our own call)."""
        key = self.key(spec, messages)
        hit = self.cache.get(key) if self.cache is not None else None
        return hit is None or self.replay.counts_as_paid(key, hit.owner)

    async def complete(
        self, spec: ModelSpec, messages: Sequence[Mapping[str, object]], role: Role = "task"
    ) -> Completion:
        """One answer: from the cache, from an identical call in flight, or from the provider.

        At most ``2 * max_workers + 16`` calls are inside at once, and a paid call waits for
        its share of ``max_workers`` (``reflex.models.admission``).
        """
        async with self.admission.entry():
            return await self._complete(spec, messages, role)

    async def _complete(
        self, spec: ModelSpec, messages: Sequence[Mapping[str, object]], role: Role
    ) -> Completion:
        self._size_local(spec)
        key = self.key(spec, messages)
        if key in self._inflight:  # the same request is already being paid for: share it
            shared = await asyncio.shield(self._inflight[key])
            self.ledger.add_cache_hit(role, shared.cost)
            return _as_cached(shared)
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            if self.replay.counts_as_paid(key, hit.owner):
                self.ledger.add_call(role, hit.prompt_tokens, hit.completion_tokens, hit.cost)
            else:
                self.ledger.add_cache_hit(role, hit.cost)
            self.replay.answered(key)
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
        self, key: str, spec: ModelSpec, messages: Sequence[Mapping[str, object]], role: Role
    ) -> Completion:
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            self._start_pool(spec)
            wire_ok = self._offloadable(spec) and self.offload is not None and self.offload.alive()
            admission = self.admission
            async with admission.in_order(spec), admission.slot(wire_ok=wire_ok) as gate:
                completion = await self._call_with_retries(spec, messages, role, gate)
            completion = priced(completion, self.settings.prices.get(spec.model))
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
                        self.replay.owner,
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
        self.replay.answered(key)
        future.set_result(completion)
        return completion

    async def _call_with_retries(
        self,
        spec: ModelSpec,
        messages: Sequence[Mapping[str, object]],
        role: Role,
        gate: Gate | None = None,
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
        messages: Sequence[Mapping[str, object]],
        attempt: int,
        gate: Gate | None,
    ) -> Completion:
        """One attempt, wherever it runs, bounded by its total deadline (models.deadline)."""
        with response_limit(self.settings.max_response_mb):
            return await self._attempt_capped(spec, messages, attempt, gate)

    async def _attempt_capped(
        self,
        spec: ModelSpec,
        messages: Sequence[Mapping[str, object]],
        attempt: int,
        gate: Gate | None,
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
            async with self.admission.fallback():  # no client process left: a slot here
                return await self._here(spec, messages, attempt)
        if offload is not None and self._offloaded(spec):
            return await offload.call(spec, messages, attempt, None, call_deadline(spec))
        return await self._here(spec, messages, attempt)

    async def _here(
        self, spec: ModelSpec, messages: Sequence[Mapping[str, object]], attempt: int
    ) -> Completion:
        litellm = load_litellm()  # the first import takes seconds: not inside the deadline
        return await within_deadline(
            call_once(litellm, spec, messages, attempt), call_deadline(spec)
        )

    def _offloadable(self, spec: ModelSpec) -> bool:
        """Whether this call may run in a client process (no side effect: see ``_start_pool``)."""
        if self.offload is None and not self._processes:
            return False
        return may_leave(spec, routed=self._routed(spec))

    def _start_pool(self, spec: ModelSpec) -> None:
        """Start the client processes for the first call that can go to them while every call
        so far did (``--client-processes``; see :mod:`reflex.models.admission`)."""
        if self.offload is None and self.admission.wire and self._offloadable(spec):
            self.offload = client_pool(self._processes)

    def _size_local(self, spec: ModelSpec) -> None:
        """At this client's first ``local`` call, before its cache key: the embedded model's
        contexts or batch (``--local-workers``, ``--local-batch``; reflex.models.local)."""
        if not self._local_sized and spec.model.startswith("local/"):
            from reflex.models.local_serving import set_workers

            settings = self.settings
            self._local_sized = set_workers(settings.local_workers, settings.local_batch) > 0

    def _offloaded(self, spec: ModelSpec) -> bool:
        """Whether a call that holds a whole-call slot runs in a client process now."""
        return self._offloadable(spec) and self.offload is not None and self.offload.ready()

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
