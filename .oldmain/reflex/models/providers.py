"""In-process LiteLLM providers (``register_provider``) and the one lazy ``import litellm``.

Kept apart from the client so that a provider module (``reflex.models.local``) can register
itself without importing the client that calls it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from litellm.llms.custom_llm import CustomLLM

__all__ = ["is_custom", "is_serial", "litellm_loaded", "load_litellm", "register_provider"]

# provider name -> factory(litellm module) returning a litellm.CustomLLM instance.
Factory = Callable[[ModuleType], "CustomLLM"]
_CUSTOM_PROVIDERS: dict[str, Factory] = {}
_INSTALLED: dict[str, CustomLLM] = {}


# Providers whose calls run one at a time, in the order the run asked for them (see below).
_SERIAL: set[str] = set()


def register_provider(name: str, factory: Factory, *, serial: bool = False) -> None:
    """Make ``name/<model>`` strings resolve to an in-process LiteLLM ``CustomLLM``.

    ``factory(litellm)`` runs once, after litellm is imported, so registering costs nothing.
    ``serial``: the model computes one answer at a time anyway (an in-process llama.cpp), so
    calls enter LiteLLM one by one in the order they were made. Its answers can depend on the
    previous call (llama.cpp reuses the evaluated prompt prefix, and float rounding differs with
    the split), and LiteLLM's thread-pool hop would otherwise let thread scheduling pick that
    order: serial calls keep a run's outputs the same from one run to the next.
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


def litellm_loaded() -> bool:
    return "litellm" in _LOADED


def load_litellm() -> ModuleType:
    """Import litellm once (offline cost map, quiet) and install the registered providers."""
    if "litellm" not in _LOADED:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True
        _LOADED["litellm"] = litellm
    _install_custom_providers(_LOADED["litellm"])
    return _LOADED["litellm"]
