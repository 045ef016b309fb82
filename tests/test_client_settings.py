"""reflex.models.client_settings: a client's limits, retries and prices, checked when made."""

from __future__ import annotations

import pytest

from reflex.config import default
from reflex.errors import ConfigurationError
from reflex.models.client import ClientSettings as ReExported
from reflex.models.client import ProviderClient
from reflex.models.client_settings import ClientSettings


def test_max_workers_must_be_positive() -> None:
    with pytest.raises(ConfigurationError, match="max_workers"):
        ProviderClient(ClientSettings(max_workers=0))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"local_workers": -2}, "local_workers and local_batch must be >= 0, got -2 and 0"),
        ({"local_batch": -1}, "local_workers and local_batch must be >= 0, got 0 and -1"),
    ],
)
def test_negative_local_sizes_are_refused(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        ClientSettings(**kwargs)


def test_the_defaults_are_run_config_s() -> None:
    settings = ClientSettings()
    assert settings.max_workers == default("max_workers")
    assert settings.cache_namespace == default("cache_namespace")
    assert settings.processes == default("client_processes")
    assert (settings.local_workers, settings.local_batch) == (
        default("local_workers"),
        default("local_batch"),
    )
    assert ReExported is ClientSettings  # reflex.models.client keeps the name
