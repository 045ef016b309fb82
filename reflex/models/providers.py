"""In-process LiteLLM providers (``register_provider``) and the one lazy ``import litellm``.

Kept apart from the client so that a provider module (``reflex.models.local``) can register
itself without importing the client that calls it.
"""

from __future__ import annotations

import gc
import os
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from litellm.llms.custom_llm import CustomLLM

__all__ = [
    "is_custom",
    "is_serial",
    "lanes",
    "litellm_loaded",
    "load_litellm",
    "register_provider",
    "set_lanes",
]

# provider name -> factory(litellm module) returning a litellm.CustomLLM instance.
Factory = Callable[[ModuleType], "CustomLLM"]
_CUSTOM_PROVIDERS: dict[str, Factory] = {}
_INSTALLED: dict[str, CustomLLM] = {}


# Providers whose calls enter in the order the run asked for them, ``lanes`` at a time (below).
_SERIAL: set[str] = set()
_LANES: dict[str, int] = {}


def register_provider(name: str, factory: Factory, *, serial: bool = False) -> None:
    """Make ``name/<model>`` strings resolve to an in-process LiteLLM ``CustomLLM``.

    ``factory(litellm)`` runs once, after litellm is imported, so registering costs nothing.
    ``serial``: the model computes one answer at a time anyway (an in-process llama.cpp), so
    calls enter LiteLLM one by one in the order they were made. Its answers can depend on the
    previous call (llama.cpp reuses the evaluated prompt prefix, and float rounding differs with
    the split), and LiteLLM's thread-pool hop would otherwise let thread scheduling pick that
    order: serial calls keep a run's outputs the same from one run to the next. A serial
    provider that computes several answers at once (the embedded model's ``--local-workers``)
    says how many with :func:`set_lanes`; its calls still enter in order.
    """
    _CUSTOM_PROVIDERS[name] = factory
    if serial:
        _SERIAL.add(name)
    else:
        _SERIAL.discard(name)
    _INSTALLED.pop(name, None)
    if "litellm" in _LOADED:
        _install_custom_providers(_LOADED["litellm"])


_LOADED: dict[str, ModuleType] = {}


# Untyped: the module is written to (``custom_provider_map``), which ModuleType does not allow.
def _install_custom_providers(litellm: Any) -> None:
    for name, factory in _CUSTOM_PROVIDERS.items():
        if name not in _INSTALLED:
            _INSTALLED[name] = factory(litellm)
    others = [item for item in litellm.custom_provider_map if item["provider"] not in _INSTALLED]
    litellm.custom_provider_map = others + [
        {"provider": name, "custom_handler": handler} for name, handler in _INSTALLED.items()
    ]
    litellm.utils.custom_llm_setup()


def is_custom(provider: str) -> bool:
    """True when ``provider`` names an in-process provider registered here."""
    return provider in _CUSTOM_PROVIDERS


def is_serial(provider: str) -> bool:
    """True when ``provider``'s calls enter LiteLLM one at a time (see ``register_provider``)."""
    return provider in _SERIAL


def set_lanes(provider: str, n: int) -> None:
    """Let up to ``n`` of a serial provider's calls be inside LiteLLM at once (default 1)."""
    if n < 1:
        raise ValueError(f"lanes must be >= 1, got {n}")
    _LANES[provider] = n


def lanes(provider: str) -> int:
    """How many of a serial provider's calls may be inside LiteLLM at once (1 unless set)."""
    return _LANES.get(provider, 1)


def litellm_loaded() -> bool:
    return "litellm" in _LOADED


def load_litellm() -> ModuleType:
    """Import litellm once (offline cost map, quiet) and install the registered providers."""
    if "litellm" not in _LOADED:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True
        _quiet_cancelled_calls()
        _LOADED["litellm"] = litellm
        # LiteLLM's import leaves millions of long-lived objects; every full garbage collection
        # walked them all (~0.1 s each, triggered by a run's own allocations: a 2,300-row
        # evaluation spent 0.5 s in them before its first request). They live as long as the
        # process, so they are moved out of the collector's sight.
        gc.freeze()
    _install_custom_providers(_LOADED["litellm"])
    return _LOADED["litellm"]


def _quiet_cancelled_calls() -> None:
    """No ``RuntimeWarning: coroutine '...acompletion' was never awaited`` for cancelled calls.

    LiteLLM's ``acompletion`` builds the provider's coroutine in a worker thread and awaits it
    once the thread returns. A call cancelled meanwhile (the run stopping at a permanent error,
    Ctrl-C, a call deadline) leaves that coroutine unawaited, and Python warns on stderr when it
    is collected: noise about a call that was never sent. Only LiteLLM's completion coroutines
    are silenced; any other unawaited coroutine still warns.
    """
    warnings.filterwarnings(
        "ignore",
        message=r"coroutine '[\w.<>]*(?:[Cc]ompletion|[Ss]tream)[\w.<>]*' was never awaited",
        category=RuntimeWarning,
    )
