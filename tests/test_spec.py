"""A model as provider/model and its call settings: what reaches LiteLLM, what keys the cache."""

from __future__ import annotations

import pytest

from reflex.errors import ConfigurationError
from reflex.models.spec import ModelSpec, parse_model


@pytest.mark.parametrize("value", ["gpt-4o-mini", "openai/", "/gpt-4o", ""])
def test_model_without_provider_is_a_configuration_error(value: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_model(value)
    message = str(info.value)
    assert repr(value) in message and "provider/model" in message and "\n" not in message
    with pytest.raises(ConfigurationError):
        ModelSpec(value)


def test_valid_model_strings_pass_through() -> None:
    assert parse_model("openai/gpt-4o-mini") == "openai/gpt-4o-mini"
    assert parse_model("ollama/llama3:8b") == "ollama/llama3:8b"
    assert ModelSpec("fake/m").model == "fake/m"


def test_call_kwargs_and_cache_params() -> None:
    spec = ModelSpec("openai/x", temperature=0.3, timeout=9.0, extra={"top_p": 0.5})
    assert spec.call_kwargs() == {
        "temperature": 0.3,
        "timeout": 9.0,
        "seed": 0,
        "top_p": 0.5,
        "max_retries": 0,
    }
    full = ModelSpec("openai/x", api_base="http://h/v1", max_tokens=50, seed=None)
    assert full.call_kwargs()["api_base"] == "http://h/v1" and "seed" not in full.call_kwargs()
    # The timeout does not change the answer, so it is not part of the cache key.
    assert "timeout" not in spec.cache_params() and spec.cache_params()["top_p"] == 0.5
