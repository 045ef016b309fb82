"""How a run's model calls are made: :class:`ChannelConfig`, the settings of the model channel.

The models and where they are sent, how they decode, how many calls are in flight and where
their CPU work runs, how long a failing call retries, the response cache and the price table.
A base module: :class:`reflex.config.BaseRunConfig` is built on it (its fields are run settings
like any other, named and defaulted here once); :mod:`reflex.models` reads them when a run's
client is made. Endpoints and cache URLs may hold credentials: they are dumped redacted.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from reflex.models.spec import parse_model
from reflex.redact import redact_data, redact_url

__all__ = ["ChannelConfig"]


class ChannelConfig(BaseModel):
    """The model channel's settings: task and reasoning models, their endpoints and decoding,
    concurrency, retries, the largest answer, the response cache and prices."""

    model_config = ConfigDict(extra="forbid")

    models: list[str] = Field(default_factory=list, description="Task model(s) as provider/model.")
    api_base: str | None = Field(  # may hold credentials
        default=None, repr=False, description="API base URL for the task model(s)."
    )
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="Task-model temperature.")
    max_tokens: int | None = Field(
        default=None, gt=0, description="Task-model output limit (tokens)."
    )
    reasoning_model: str | None = Field(
        default=None, description="Reasoning model as provider/model."
    )
    reasoning_base_url: str | None = Field(
        default=None, repr=False, description="API base URL for the reasoning model."
    )
    reasoning_temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    max_workers: int = Field(
        default=8, gt=0, description="Model calls in flight at once, across the whole run."
    )
    retry_window: float = Field(  # reflex.models.retry.RetryPolicy.progress_window
        default=120.0,
        gt=0,
        allow_inf_nan=False,
        description="A call that keeps failing stops retrying once the provider has answered "
        "nothing for this long (seconds).",
    )
    max_response_mb: float = Field(  # see reflex.models.body_limit
        default=16.0,
        gt=0,
        allow_inf_nan=False,
        description="A provider answer larger than this (MiB) fails its call, not retried, "
        "instead of being read into memory whole.",
    )
    client_processes: int = Field(  # see reflex.models.offload
        default=0,
        ge=0,
        le=64,
        description="Processes that run LiteLLM's per-call CPU off the run's event loop; try "
        "the number of cores when many calls are in flight to a fast provider (0: in-process).",
    )
    local_workers: int = Field(  # see reflex.models.local_pool
        default=0,
        ge=0,
        le=256,
        description="Contexts of the embedded model (local/...) computing answers at once, one "
        "thread each, same answers as 1 (0: one per core, at most one per 0.7 GB of memory).",
    )
    local_batch: int = Field(  # see reflex.models.local_batch
        default=0,
        ge=0,
        le=64,
        description="Decode up to N calls of the embedded model together in one context: "
        "faster, but answers are not bit-identical to serial ones (cached apart); 0: off.",
    )
    prices: dict[str, tuple[float, float]] = Field(  # model -> (input, output)
        default_factory=dict,
        description="Price of a model in USD per million input and output tokens, instead of "
        "LiteLLM's (self-hosted and unpriced models then have a cost, and the cost budget binds "
        "on them).",
    )
    cache_namespace: str = Field(
        default="default", description="Change to ignore earlier cached responses."
    )
    # Beyond one machine (docs/scaling.md): a LiteLLM Router config (the proxy's model_list YAML
    # path, or the mapping itself) and a shared response cache (redis://..., postgresql://...).
    router_config: str | dict[str, Any] | None = Field(
        default=None,
        repr=False,
        description="Spread calls over deployments with a LiteLLM Router (the proxy's "
        "model_list YAML); a model named like a model_name there (or router/NAME) goes "
        "through it.",
    )
    cache_url: str | None = Field(
        default=None,
        repr=False,
        description="A response cache shared by processes and machines: redis://HOST:6379/0 or "
        "a SQL database URL (postgresql://USER@HOST/DB). Default: RUN_DIR/cache.sqlite.",
    )

    @field_serializer("router_config")
    def _router_secrets(self, value: str | dict[str, Any] | None) -> str | dict[str, Any] | None:
        return redact_data(value) if isinstance(value, dict) else value

    @field_serializer("cache_url")
    def _cache_url(self, value: str | None) -> str | None:
        # redact_url keeps every character but the credentials, so a URL without any
        # (sqlite:////abs/path) survives for check/export to read the cache back.
        return redact_url(value)

    @field_serializer("api_base", "reasoning_base_url")
    def _no_credentials(self, value: str | None) -> str | None:
        # Credentials in a URL are secrets: config.json, callbacks' dumps and resume's
        # comparison only ever see the redacted form; model calls use the attribute itself.
        return redact_url(value)

    @field_validator("models")
    @classmethod
    def _models(cls, value: list[str]) -> list[str]:
        return [parse_model(m) for m in value]

    @field_validator("prices")
    @classmethod
    def _prices(cls, value: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
        for model, pair in value.items():
            parse_model(model)
            if not all(0 <= p < float("inf") for p in pair):  # nan fails both comparisons
                raise ValueError(
                    f"price of {model}: {pair[0]}:{pair[1]} must be finite numbers >= 0 (USD per "
                    "million input and output tokens)"
                )
        return value

    @field_validator("reasoning_model")
    @classmethod
    def _reasoning(cls, value: str | None) -> str | None:
        return parse_model(value) if value else None
