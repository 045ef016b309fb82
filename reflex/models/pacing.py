"""Per-deployment pacing for the LiteLLM Router: each deployment's calls ``60 / rpm`` s apart.

A generic cell rate algorithm: a deployment's "theoretical arrival time" (TAT) is the earliest
moment its next call may start; reserving a call moves it on by one interval. Kept in this
process (:func:`local_pacing`) or in Redis (:func:`redis_pacing`, one Lua script per reservation,
on Redis's clock, so processes on several machines share it without trusting their clocks).

It plugs into the Router as a routing callback (:func:`install_pacer`): the Router's own
filters (cooldowns, context window) run first, the pacer keeps the deployments free soonest,
the routing strategy picks one of them, and the pacer's pre-call check waits for its turn.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from reflex.redact import redact_url

__all__ = ["Pacing", "install_pacer", "interval_of", "local_pacing", "redis_pacing"]

logger = logging.getLogger(__name__)

_PREFIX = "reflex:pace:"
# KEYS[1] the deployment's TAT; ARGV[1] the interval (s). Returns the wait (s) as a string.
_RESERVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local interval = tonumber(ARGV[1])
redis.call('SET', KEYS[1], string.format('%.6f', tat + interval), 'EX', 3600)
return string.format('%.6f', tat - now)
"""
# KEYS: TATs; returns the wait (s) before each, as strings.
_PEEK = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local out = {}
for i, key in ipairs(KEYS) do
  local tat = tonumber(redis.call('GET', key) or '0')
  out[i] = string.format('%.6f', math.max(0, tat - now))
end
return out
"""


class Pacing(Protocol):
    """Where the TATs live."""

    async def waits(self, ids: Sequence[str]) -> list[float]:
        """Seconds until each deployment's next free slot (0 when free now)."""

    async def reserve(self, deployment: str, interval: float) -> float:
        """Take the next slot of ``deployment``; returns the seconds to wait for it."""


class _LocalPacing:
    def __init__(self) -> None:
        self._tat: dict[str, float] = {}

    async def waits(self, ids: Sequence[str]) -> list[float]:
        now = time.monotonic()
        return [max(0.0, self._tat.get(i, now) - now) for i in ids]

    async def reserve(self, deployment: str, interval: float) -> float:
        now = time.monotonic()
        tat = max(self._tat.get(deployment, now), now)
        self._tat[deployment] = tat + interval
        return tat - now


class _RedisPacing:
    """The TATs in Redis; a client per event loop (redis.asyncio clients are bound to one)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._scripts: dict[int, tuple[Any, Any]] = {}
        self._local = _LocalPacing()  # while Redis does not answer
        self._warned = False

    def _script(self, which: int) -> Any:
        """The (peek, reserve) Lua scripts, run by EVALSHA through this loop's client."""
        import redis.asyncio as aioredis

        loop = id(asyncio.get_running_loop())
        if loop not in self._scripts:
            client = aioredis.Redis.from_url(self.url)
            self._scripts = {
                loop: (client.register_script(_PEEK), client.register_script(_RESERVE))
            }
        return self._scripts[loop][which]

    async def waits(self, ids: Sequence[str]) -> list[float]:
        try:
            found = await self._script(0)(keys=[_PREFIX + i for i in ids])
            return [float(v) for v in found]
        except Exception as exc:  # noqa: BLE001 - classified in _down
            return await self._down(exc).waits(ids)

    async def reserve(self, deployment: str, interval: float) -> float:
        try:
            found = await self._script(1)(keys=[_PREFIX + deployment], args=[f"{interval:.6f}"])
            return float(found)
        except Exception as exc:  # noqa: BLE001 - classified in _down
            return await self._down(exc).reserve(deployment, interval)

    def _down(self, exc: Exception) -> Pacing:
        """Redis stopped answering mid-run: pace in this process, and say so once (the run
        goes on; other processes no longer share the limits until Redis is back)."""
        import redis

        if not isinstance(exc, (redis.RedisError, OSError)):
            raise exc
        if not self._warned:
            self._warned = True
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            logger.warning(
                "router pacing: Redis %s is unavailable (%s); each deployment is paced in this "
                "process only, not shared with other processes, until Redis answers again",
                redact_url(self.url),
                first,
            )
        return self._local


def local_pacing() -> Pacing:
    return _LocalPacing()


def redis_pacing(url: str) -> Pacing:
    return _RedisPacing(url)


def interval_of(deployment: Mapping[str, Any]) -> float | None:
    """``60 / rpm`` for a deployment with an ``rpm`` (where LiteLLM reads it), else None."""
    params = deployment.get("litellm_params") or {}
    info = deployment.get("model_info") or {}
    rpm = deployment.get("rpm") or params.get("rpm") or info.get("rpm")
    return 60.0 / float(rpm) if rpm else None


def _id(deployment: Mapping[str, Any]) -> str:
    return str((deployment.get("model_info") or {}).get("id", ""))


# deployment id -> where its TAT lives; one pacer callback per process serves every router.
_PACED: dict[str, Pacing] = {}
_INSTALLED: list[object] = []


async def soonest(deployments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The paced deployments free soonest (all of them when none is paced)."""
    paced = [d for d in deployments if _id(d) in _PACED and interval_of(d)]
    if len(paced) < 2 or len(paced) != len(deployments):
        return deployments
    groups: dict[int, tuple[Pacing, list[str]]] = {}
    for deployment in paced:
        backend = _PACED[_id(deployment)]
        groups.setdefault(id(backend), (backend, []))[1].append(_id(deployment))
    waits: dict[str, float] = {}
    for backend, ids in groups.values():
        waits.update(zip(ids, await backend.waits(ids), strict=False))
    best = min(waits.values())
    return [d for d in deployments if waits[_id(d)] <= best + 1e-3]


async def wait_turn(deployment: Mapping[str, Any]) -> None:
    """Reserve the deployment's next slot and sleep until it comes."""
    interval = interval_of(deployment)
    backend = _PACED.get(_id(deployment))
    if backend is None or interval is None:
        return
    wait = await backend.reserve(_id(deployment), interval)
    if wait > 0:
        await asyncio.sleep(wait)


def install_pacer(litellm: Any, backend: Pacing, deployments: Sequence[Mapping[str, Any]]) -> None:
    """Pace ``deployments`` (as the Router lists them) through ``backend``; idempotent."""
    for deployment in deployments:
        if _id(deployment):
            _PACED[_id(deployment)] = backend
    if _INSTALLED:
        return
    from litellm.integrations.custom_logger import CustomLogger

    class _Pacer(CustomLogger):
        reflex_internal = True  # a Router hook, no reader of LiteLLM's logging (litellm_call)

        async def async_filter_deployments(
            self,
            model: str,
            healthy_deployments: list[dict[str, Any]],
            messages: object,
            request_kwargs: object = None,
            parent_otel_span: object = None,
        ) -> list[dict[str, Any]]:
            return await soonest(healthy_deployments)

        async def async_pre_call_check(
            self, deployment: dict[str, Any], parent_otel_span: object = None
        ) -> dict[str, Any]:
            await wait_turn(deployment)
            return deployment

    pacer = _Pacer()
    _INSTALLED.append(pacer)
    litellm.callbacks.append(pacer)
