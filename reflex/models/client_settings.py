"""How a :class:`~reflex.models.client.ProviderClient` calls: its limits, retries and prices.

Each default is :class:`reflex.config.RunConfig`'s field (``default(name)``); the values are
checked when the settings are made, before any call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reflex.config import default
from reflex.errors import ConfigurationError
from reflex.models.body_limit import DEFAULT_MAX_RESPONSE_MB
from reflex.models.retry import RetryPolicy

__all__ = ["ClientSettings"]


@dataclass(frozen=True)
class ClientSettings:
    """How a :class:`ProviderClient` calls: its limits, retries and prices."""

    max_workers: int = default("max_workers")  # requests in flight (reflex.models.admission)
    cache_namespace: str = default("cache_namespace")
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    seed: int = 0  # the retry jitter's
    # Client processes for LiteLLM's per-call CPU (models.offload), started by the first call
    # that can leave this process (unless the client is given an ``offload`` pool).
    processes: int = default("client_processes")
    # Contexts of the embedded model answering at once (models.local_pool; 0: one per core).
    local_workers: int = default("local_workers")
    local_batch: int = default("local_batch")  # 0: off (not bit-identical to serial)
    # USD per million (input, output) tokens by model: replaces LiteLLM's price (--price).
    prices: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    # An answer over this many MiB fails its call (reflex.models.body_limit).
    max_response_mb: float = DEFAULT_MAX_RESPONSE_MB

    def __post_init__(self) -> None:
        if self.max_workers < 1:
            raise ConfigurationError(f"max_workers must be >= 1, got {self.max_workers}")
        if min(self.local_workers, self.local_batch) < 0:
            raise ConfigurationError(
                f"local_workers and local_batch must be >= 0, got {self.local_workers} and "
                f"{self.local_batch}"
            )
