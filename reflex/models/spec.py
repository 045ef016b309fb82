"""A model and its decoding parameters: what a call is, and what its cache key is made of."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reflex.errors import ConfigurationError

__all__ = ["ModelSpec", "parse_model"]


def parse_model(value: str) -> str:
    """Validate a ``provider/model`` string; the error shows the bad value and the fix."""
    provider, _, name = value.partition("/")
    if not provider or not name:
        raise ConfigurationError(
            f"model {value!r} has no provider: write it as provider/model, e.g. "
            f"openai/gpt-4o-mini (a model_name of a --router-config: router/{value or 'NAME'})"
        )
    return value


@dataclass(frozen=True)
class ModelSpec:
    """A model plus its decoding parameters; everything here is part of the cache key."""

    model: str
    api_base: str | None = None
    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int | None = 0
    timeout: float = 120.0
    extra: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        parse_model(self.model)

    def cache_params(self) -> dict[str, object]:
        params = {
            "api_base": self.api_base,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            **dict(self.extra),
        }
        if self.model.startswith("local/"):  # the same name can mean another file later
            from reflex.models.local import model_identity

            params["model_file"] = model_identity(self.model)
        return params

    def call_kwargs(self) -> dict[str, object]:
        # max_retries=0: the OpenAI SDK under LiteLLM would otherwise retry twice on its own,
        # unseen by our ledger, our run-wide back-off and the budget.
        kwargs: dict[str, object] = {
            "temperature": self.temperature,
            "timeout": self.timeout,
            "max_retries": 0,
        }
        for name in ("api_base", "max_tokens", "seed"):
            if getattr(self, name) is not None:
                kwargs[name] = getattr(self, name)
        kwargs.update(self.extra)
        return kwargs
