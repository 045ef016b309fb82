"""The builder's model side: the models a run calls and how it calls them.

The task models and their endpoint, the reasoning model, the model the prompt was written for
(a bare ``model_name`` of the LiteLLM Router config set is routed), the shared response cache,
prices, the retry window, the answer-size cap and the concurrency.
:class:`reflex.optimizer.PromptOptimizer` is built on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reflex.config import SettingsBuilder
from reflex.errors import ConfigurationError
from reflex.models.spec import parse_model

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["ModelSide"]


class ModelSide(SettingsBuilder):
    """Which models a run calls, where, at what price and how many at once (the builder's model
    setters)."""

    def add_provider(
        self,
        provider: str,
        model: str | None = None,
        *,
        api_base: str | None = None,
        base_url: str | None = None,
    ) -> Self:
        """Add a task model: ``add_provider("openai", "gpt-4o-mini")`` or ``("openai/gpt-4o")``.

        ``api_base`` applies to every task model (one endpoint per run); ``base_url`` is its
        alias (the name ``set_reasoning_model`` takes too).
        """
        api_base = _endpoint(api_base, base_url)
        full = parse_model(self._routed(f"{provider}/{model}" if model else provider))
        if api_base is not None:
            self._set(api_base=api_base)
        return self._set(models=[*self._config.models, full])

    add_model = add_provider

    def set_reasoning_model(
        self,
        model: str,
        *,
        api_base: str | None = None,
        temperature: float | None = None,
        base_url: str | None = None,
    ) -> Self:
        """The reasoning model; ``api_base`` its endpoint (``base_url``: the older name)."""
        endpoint = _endpoint(api_base, base_url)
        extra = {} if temperature is None else {"reasoning_temperature": temperature}
        model = self._routed(model)
        return self._set(reasoning_model=model, reasoning_base_url=endpoint, **extra)

    def _routed(self, model: str) -> str:
        """``router/<name>`` for a bare ``model_name`` of the Router config set (set_router)."""
        config = self._config.router_config
        if not config or not isinstance(model, str) or "/" in model:
            return model
        from reflex.models.router import routed_name

        return routed_name(model, config)

    def set_source_model(self, model: str) -> Self:
        """The model the prompt was written for; reasoning prompts add migration guidance."""
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError(f"source model must be a model name, got {model!r}")
        return self._set(source_model=model.strip())

    def set_retry_window(self, seconds: float) -> Self:
        """How long the provider may answer nothing before a call that keeps failing stops
        retrying (default 120 s; finite, > 0). Under ``max_seconds`` no retry waits past the
        deadline whatever the window (the step ends, and the final keeps its reserve)."""
        return self._set(retry_window=seconds)

    def set_max_response_mb(self, megabytes: float) -> Self:
        """The largest provider answer read, in MiB (default 16; finite, > 0): a larger one
        fails its call, not retried, instead of being read into memory whole."""
        return self._set(max_response_mb=megabytes)

    def set_price(self, model: str, input_per_million: float, output_per_million: float) -> Self:
        """The price of ``model`` in USD per million input and output tokens, used instead of
        LiteLLM's: a self-hosted or unpriced model then has a cost, and ``max_cost`` binds."""
        pair = (input_per_million, output_per_million)
        return self._set(prices={**self._config.prices, model: pair})

    def set_max_workers(self, n: int) -> Self:
        return self._set(max_workers=n)

    def set_local_workers(self, k: int) -> Self:
        """Contexts of the embedded model (``local/...``) answering at once, one thread each,
        with the same answers as one (0, the default: one per core, capped by memory)."""
        return self._set(local_workers=k)

    def set_local_batch(self, n: int) -> Self:
        """Decode up to ``n`` calls of the embedded model together in one context (0: off):
        faster, but answers are not bit-identical to serial ones, so they are cached apart."""
        return self._set(local_batch=n)

    def set_cache_url(self, url: str | None) -> Self:
        """A shared response cache (redis://... or a SQL URL); None: the run dir's sqlite."""
        return self._set(cache_url=url)


def _endpoint(api_base: str | None, base_url: str | None) -> str | None:
    """``api_base``, or its alias ``base_url``; both given (and different) is an error."""
    if api_base is not None and base_url is not None and api_base != base_url:
        raise ConfigurationError("give the endpoint once: api_base=... (base_url is its alias)")
    return api_base if api_base is not None else base_url
