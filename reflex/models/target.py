"""Where a call goes, as LiteLLM picks it: the endpoint a model spec resolves to, and what else
outside the spec selects the answer.

LiteLLM reads a provider's base URL from the call's ``api_base``, then its module setting
``litellm.api_base``, then the provider's environment variables (``OPENAI_BASE_URL`` /
``OPENAI_API_BASE`` for ``openai``, ``HOSTED_VLLM_API_BASE``, ``<PROVIDER>_API_BASE`` for the
OpenAI-compatible ones), then the provider's default. The lean transport (``wire.py``) picks its
URL through :func:`base_url`, and the response cache key (``client.py``) is made of
:func:`selectors`, so the two cannot disagree: two runs whose calls go to different servers never
share cache entries, whichever setting chose the server.
"""

from __future__ import annotations

import hashlib
import os
import sys
from typing import TYPE_CHECKING

from reflex.models import providers

if TYPE_CHECKING:
    from reflex.models.spec import ModelSpec

__all__ = ["base_env", "base_url", "selectors"]

# Base-URL variables LiteLLM reads for a provider, in its order (``litellm.main`` and
# ``get_llm_provider``); any other provider's are ``<PROVIDER>_API_BASE`` / ``<PROVIDER>_BASE_URL``.
_BASE_ENV: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "text-completion-openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "hosted_vllm": ("HOSTED_VLLM_API_BASE",),
    "together_ai": ("TOGETHER_AI_API_BASE", "TOGETHERAI_API_BASE"),
    "azure": ("AZURE_API_BASE",),
}


def base_env(provider: str) -> tuple[str, ...]:
    """The environment variables that choose ``provider``'s endpoint, in LiteLLM's order."""
    if provider in _BASE_ENV:
        return _BASE_ENV[provider]
    name = provider.upper().replace("-", "_")
    return (f"{name}_API_BASE", f"{name}_BASE_URL")


def base_url(
    provider: str,
    given: str | None,
    *,
    found: str | None = None,
    module: str | None = None,
    default: str | None = None,
) -> str | None:
    """The base URL a call goes to: ``given`` (the spec's api_base), ``found`` (what LiteLLM's
    ``get_llm_provider`` returned), ``module`` (``litellm.api_base``), the provider's
    environment variables, else ``default`` (None: LiteLLM's own default)."""
    for value in (given, found, module, *map(os.environ.get, base_env(provider)), default):
        if value:
            return str(value)
    return None


def selectors(spec: ModelSpec) -> dict[str, str]:
    """What outside the spec selects the answer to ``spec``'s calls, for the cache key.

    Empty when the spec decides it alone (its own ``api_base`` wins over every setting, and
    the default endpoint follows from the provider in the model name), so keys made before
    these settings were counted still match there. Otherwise: the endpoint an environment
    variable or ``litellm.api_base`` chose, the model ``litellm.model_alias_map`` turns the name
    into, and LiteLLM's module ``headers`` (hashed: they may hold a key). The key itself is a
    sha256 (``reflex.models.cache``): no URL or header value is stored anywhere.
    """
    provider = spec.model.partition("/")[0]
    if providers.is_custom(provider):  # served in this process: no endpoint to resolve
        return {}
    litellm = sys.modules.get("litellm")  # settings made in Python on the litellm module
    found: dict[str, str] = {}
    if spec.api_base is None:
        module = getattr(litellm, "api_base", None) if litellm is not None else None
        endpoint = base_url(provider, None, module=module if isinstance(module, str) else None)
        if endpoint is not None:
            found["@endpoint"] = endpoint
    if litellm is not None:
        aliases = getattr(litellm, "model_alias_map", None)
        if isinstance(aliases, dict) and spec.model in aliases:
            found["@model_alias"] = str(aliases[spec.model])
        headers = getattr(litellm, "headers", None)
        if headers:
            found["@headers"] = hashlib.sha256(repr(headers).encode()).hexdigest()
    return found
