"""A model and its decoding parameters: what a call is, and what its cache key is made of."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

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
    # What the request offers and asks for (OpenAI's fields, checked by
    # reflex.data.tool_schemas): sent on every transport, part of the cache key when set.
    tools: Sequence[Mapping[str, object]] = ()
    tool_choice: str | Mapping[str, object] | None = None
    response_format: Mapping[str, object] | None = None

    def __post_init__(self) -> None:
        parse_model(self.model)

    def request_options(self) -> dict[str, object]:
        """``tools`` / ``tool_choice`` / ``response_format`` as the request carries them (only
        those set; ``tool_choice`` only with tools, where providers accept it)."""
        options: dict[str, object] = {}
        if self.tools:
            options["tools"] = [dict(tool) for tool in self.tools]
            if self.tool_choice is not None:
                choice = self.tool_choice
                options["tool_choice"] = choice if isinstance(choice, str) else dict(choice)
        if self.response_format is not None:
            options["response_format"] = dict(self.response_format)
        return options

    def with_tools(self, tools: Sequence[Mapping[str, object]]) -> ModelSpec:
        """This spec offering ``tools`` instead of its own (an example's tools); itself when
        ``tools`` is empty (the example offers the run's tools, if any)."""
        return replace(self, tools=tuple(tools)) if tools else self

    def without_options(self) -> ModelSpec:
        """This spec without its request options (the lean transport's route is made once)."""
        if not (self.tools or self.tool_choice is not None or self.response_format is not None):
            return self
        return replace(self, tools=(), tool_choice=None, response_format=None)

    def cache_params(self) -> dict[str, object]:
        params = {
            "api_base": self.api_base,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            **dict(self.extra),
            **self.request_options(),  # none set: the keys of plain calls are unchanged
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
        kwargs.update(self.request_options())
        return kwargs
