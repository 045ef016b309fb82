"""LiteLLM's price for a call's usage numbers, asked once per distinct usage (the lean transport).

``litellm.cost_per_token`` costs ~0.2 ms of CPU per call; plain usage (no cached or reasoning
token details) is priced once per (model, prompt tokens, completion tokens), and a model LiteLLM
cannot price is asked once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["price", "token_prices"]

_PRICES: dict[tuple[str, str, int, int], float] = {}
_UNPRICED: set[tuple[str, str]] = set()


def price(litellm: Any, model: str, provider: str, usage: Mapping[str, Any]) -> float | None:
    """LiteLLM's price for this usage (None for a model it cannot price).

    ``cost_per_token`` costs ~0.2 ms of CPU per call, so plain usage numbers (no cached or
    reasoning tokens) are priced once per (model, prompt tokens, completion tokens).
    """
    name = (model, provider)
    if name in _UNPRICED:
        return None
    prompt_tokens = int(usage.get("prompt_tokens") or 0)
    completion_tokens = int(usage.get("completion_tokens") or 0)
    plain = not (
        _detail(usage, "prompt_tokens_details") or _detail(usage, "completion_tokens_details")
    )
    key = (*name, prompt_tokens, completion_tokens)
    if plain and key in _PRICES:
        return _PRICES[key]
    try:
        if plain:
            parts = litellm.cost_per_token(
                model=model,
                custom_llm_provider=provider,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
            )
        else:
            from litellm.types.utils import Usage

            parts = litellm.cost_per_token(
                model=model, custom_llm_provider=provider, usage_object=Usage(**usage)
            )
    except Exception:  # noqa: BLE001 - unknown models have no price; cost stays unknown
        _UNPRICED.add(name)
        return None
    cost = float(parts[0]) + float(parts[1])
    if plain:
        if len(_PRICES) > 65536:
            _PRICES.clear()
        _PRICES[key] = cost
    return cost


def _detail(usage: Mapping[str, Any], name: str) -> bool:
    """Whether a usage details block holds any non-zero count (cached, reasoning, audio...)."""
    details = usage.get(name)
    return isinstance(details, Mapping) and any(
        isinstance(value, (int, float)) and value for value in details.values()
    )


def token_prices(litellm: Any, model: str) -> tuple[float, float] | None:
    """USD per input and per output token of ``model`` in LiteLLM's price table, before any
    call; None when the table has no price (a plan says "unpriced", never $0)."""
    provider, _, name = model.partition("/")
    tokens = 1000  # a small count: tiered prices (above 128k or 200k tokens) stay out of it
    try:
        parts = litellm.cost_per_token(
            model=name,
            custom_llm_provider=provider,
            prompt_tokens=tokens,
            completion_tokens=tokens,
        )
    except Exception:  # noqa: BLE001 - unknown models have no price: "unpriced", never $0
        return None
    return float(parts[0]) / tokens, float(parts[1]) / tokens
