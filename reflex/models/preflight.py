"""Provider mistakes caught before the first call: an unknown provider, a missing API key.

Without this a misspelt provider or a missing key surfaced from the first calls of the baseline
(LiteLLM reports a missing OpenAI key as ``InternalServerError``), after a run directory was
created and with asyncio warnings from the calls cancelled around it. :func:`check_models` runs
when a run is built, with no network: it asks LiteLLM which provider a model string names and,
for providers whose key can only come from the environment, whether that variable is set.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from reflex.errors import ConfigurationError
from reflex.models import providers
from reflex.models.spec import ModelSpec

__all__ = ["check_models", "judge_specs"]

# Providers whose API key has no other source than these variables (or api_key= / litellm's
# module settings). Others (bedrock, vertex_ai, azure, ollama, huggingface, ...) can take their
# credentials from profiles, metadata servers or nothing at all: they are not checked.
KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY", "OR_API_KEY"),
}


def judge_specs(metrics: Iterable[object]) -> list[ModelSpec]:
    """The models of the model-graded metrics among ``metrics`` (an LLMJudge's ``judge``)."""
    found = (getattr(metric, "judge", None) for metric in metrics)
    return [spec for spec in found if isinstance(spec, ModelSpec)]


def check_models(
    specs: Iterable[ModelSpec], router_config: str | Path | Mapping[str, Any] | None = None
) -> None:
    """ConfigurationError for the first model whose provider is unknown or has no key.

    In-process providers (``local``, ``fake``, registered ones) need neither; LiteLLM is only
    imported when another provider is named. Models a LiteLLM Router config routes
    (``router_config``: reflex.models.router) are the Router's to resolve, so they are skipped
    (a ``router/NAME`` missing from the config is refused here).
    """
    if router_config:
        from reflex.models.client import load_litellm
        from reflex.models.router import ModelRouter

        router = ModelRouter(router_config)
        specs = [s for s in specs if router.group(s) is None]
        router.check(load_litellm())  # its strategy, providers and Redis: not at the first call
    remote = [s for s in specs if not providers.is_custom(s.model.partition("/")[0])]
    for spec in remote:  # first the keys, which need no LiteLLM (its import takes seconds)
        _check_key(spec)
    unknown = [s for s in remote if s.model.partition("/")[0] not in KEY_VARIABLES]
    if not unknown:
        return
    from reflex.models.client import load_litellm

    litellm = load_litellm()
    for spec in unknown:
        _check_provider(litellm, spec)


def _check_provider(litellm: ModuleType, spec: ModelSpec) -> None:
    try:
        litellm.get_llm_provider(model=spec.model, api_base=spec.api_base)
    except Exception:  # noqa: BLE001 - LiteLLM's BadRequestError: it cannot route this model
        provider = spec.model.partition("/")[0]
        known = sorted(
            {str(getattr(p, "value", p)) for p in litellm.provider_list}
            | {str(p) for p in KEY_VARIABLES}
        )
        close = difflib.get_close_matches(provider, known, n=1)
        hint = f"did you mean {close[0]}/{spec.model.partition('/')[2]}? " if close else ""
        raise ConfigurationError(
            f"model {spec.model!r}: unknown provider {provider!r}: {hint}write it as "
            "provider/model with a LiteLLM provider (https://docs.litellm.ai/docs/providers); "
            "nothing was called"
        ) from None


def _check_key(spec: ModelSpec) -> None:
    variables = KEY_VARIABLES.get(spec.model.partition("/")[0])
    if variables is None or spec.extra.get("api_key"):
        return
    if any(os.environ.get(name) for name in variables):
        return
    provider = spec.model.partition("/")[0]
    litellm = sys.modules.get("litellm")  # settings made in Python on the litellm module
    if getattr(litellm, "api_key", None) or getattr(litellm, f"{provider}_key", None):
        return
    names = " or ".join(variables)
    local = " (a local server that needs no key takes any value)" if spec.api_base else ""
    raise ConfigurationError(
        f"{spec.model}: AuthenticationError: no API key: set {names} in the environment, "
        f"e.g. export {variables[0]}=...{local}; nothing was called"
    )
