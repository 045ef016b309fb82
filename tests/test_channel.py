"""ChannelConfig (reflex/channel.py): the model channel's settings, part of every RunConfig.

Models are parsed once given; prices are finite and non-negative; endpoints, the Router config
and the cache URL keep their credentials for the calls but are dumped redacted.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from reflex.channel import ChannelConfig
from reflex.config import BaseRunConfig, RunConfig
from reflex.errors import ConfigurationError


def test_the_channel_s_fields_are_run_settings_of_their_own() -> None:
    channel = set(ChannelConfig.model_fields)
    assert {"models", "max_workers", "prices", "cache_url", "router_config"} <= channel
    assert channel < set(BaseRunConfig.model_fields)  # a run setting like any other
    assert not {"strategy", "budget", "train_split", "run_dir"} & channel
    with pytest.raises(ValidationError, match="extra"):
        ChannelConfig.model_validate({"strategy": "auto"})


def test_models_are_parsed_once_given() -> None:
    settings = BaseRunConfig(models=["openai/gpt-4o-mini"], reasoning_model="openai/o3")
    assert settings.models == ["openai/gpt-4o-mini"] and settings.reasoning_model == "openai/o3"
    with pytest.raises(ConfigurationError, match="has no provider"):
        BaseRunConfig(models=["gpt"])


@pytest.mark.parametrize("pair", [(-0.1, 1.0), (1.0, float("nan")), (float("inf"), 0.0)])
def test_a_price_must_be_finite_and_not_negative(pair: tuple[float, float]) -> None:
    with pytest.raises(ValidationError, match="must be finite numbers >= 0"):
        ChannelConfig(prices={"openai/my-vllm": pair})
    assert ChannelConfig(prices={"openai/my-vllm": (0.2, 0.6)}).prices["openai/my-vllm"] == (
        0.2,
        0.6,
    )


def test_a_price_names_a_model_with_its_provider() -> None:
    with pytest.raises(ConfigurationError, match="has no provider"):
        ChannelConfig(prices={"my-vllm": (0.2, 0.6)})


def test_endpoints_keep_their_credentials_but_are_dumped_redacted() -> None:
    url = "https://user:s3cret@llm.internal/v1"
    config = RunConfig(models=["fake/task"], api_base=url, reasoning_base_url=url)
    assert config.api_base == url  # the calls use the attribute itself
    dumped = config.model_dump(mode="json")
    assert "s3cret" not in str(dumped)
    assert dumped["api_base"] == dumped["reasoning_base_url"] == "https://***@llm.internal/v1"
    assert "s3cret" not in repr(config)


def test_a_router_config_s_secrets_are_dumped_redacted() -> None:
    router = {"model_list": [{"model_name": "m", "litellm_params": {"api_key": "sk-s3cret"}}]}
    config = RunConfig(models=["fake/task"], router_config=router)
    assert config.router_config == router
    dumped = config.model_dump(mode="json")["router_config"]
    assert "sk-s3cret" not in str(dumped)
    assert dumped["model_list"][0]["model_name"] == "m"
    path = RunConfig(models=["fake/task"], router_config="router.yaml")
    assert path.model_dump(mode="json")["router_config"] == "router.yaml"


def test_cache_url_credentials_stay_out_of_config_json() -> None:
    def saved(url: str) -> object:
        return RunConfig(models=["fake/task"], cache_url=url).model_dump(mode="json")["cache_url"]

    assert saved("redis://:s3cret@cache.internal:6379/0") == "redis://***@cache.internal:6379/0"
    assert "s3cret" not in str(saved("postgresql://reflex:s3cret@db/cache"))
    assert saved("sqlite+pysqlite:////abs/team.sqlite") == "sqlite+pysqlite:////abs/team.sqlite"
