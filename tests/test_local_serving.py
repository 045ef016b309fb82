"""Which contexts serve the embedded model (reflex.models.local_serving): K, or a batch of N.

No model is loaded here: these tests check the settings, the provider's lanes and the cache key.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reflex.errors import ConfigurationError
from reflex.models import local, local_serving, providers
from reflex.models.client import ClientSettings, ModelSpec, ProviderClient
from reflex.models.local_pool import default_workers


@pytest.fixture(autouse=True)
def _defaults() -> Iterator[None]:
    yield
    local_serving.set_workers(0, 0)


def test_set_workers_sizes_the_pools_and_the_provider_s_lanes(tmp_path: Path) -> None:
    local.register_local_provider()
    assert local_serving.set_workers(3) == 3 and local_serving.workers() == 3
    assert providers.lanes("local") == 3
    assert local_serving.set_workers(0) == default_workers() == providers.lanes("local")
    with pytest.raises(ConfigurationError, match=r"local workers must be >= 0.*-1"):
        local_serving.set_workers(-1)


def test_a_client_sizes_the_contexts_at_its_first_local_call() -> None:
    client = ProviderClient(ClientSettings(local_workers=3))
    local_serving.set_workers(1)
    client._size_local(ModelSpec("openai/gpt-4o-mini"))
    assert local_serving.workers() == 1  # not a local call: nothing changed
    client._size_local(ModelSpec("local/qwen2.5-coder-0.5b"))
    assert local_serving.workers() == 3 and providers.lanes("local") == 3
    with pytest.raises(ConfigurationError, match="local_workers and local_batch must be >= 0"):
        ClientSettings(local_workers=-2)


def test_batching_sets_the_lanes_and_keys_the_cache_apart(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setenv("REFLEX_LOCAL_MODEL", str(model))
    local._IDENTITIES.clear()
    serial = ModelSpec("local/default").cache_params()["model_file"]
    assert local_serving.set_workers(1, batch=4) == 4 == providers.lanes("local")
    batched = ModelSpec("local/default").cache_params()["model_file"]
    assert batched == f"{serial}:batched"
    assert local_serving.set_workers(1, batch=0) == 1 == providers.lanes("local")
    assert ModelSpec("local/default").cache_params()["model_file"] == serial
    with pytest.raises(ConfigurationError, match=r"local batch must be >= 0.*-2"):
        local_serving.set_workers(1, batch=-2)
    with pytest.raises(ConfigurationError, match="local_workers and local_batch must be >= 0"):
        ClientSettings(local_batch=-1)
