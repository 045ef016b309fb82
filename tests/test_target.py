"""Where a call goes (reflex/models/target.py): the endpoint LiteLLM would pick, in its order,
and what outside a model spec selects its answer (the cache key's part)."""

from __future__ import annotations

from typing import Any

import pytest

from reflex.models.spec import ModelSpec
from reflex.models.target import base_env, base_url, selectors
from reflex.testing import FakeModel


def test_each_provider_s_endpoint_variables_in_litellm_s_order() -> None:
    assert base_env("openai") == ("OPENAI_BASE_URL", "OPENAI_API_BASE")
    assert base_env("hosted_vllm") == ("HOSTED_VLLM_API_BASE",)
    assert base_env("my-proxy") == ("MY_PROXY_API_BASE", "MY_PROXY_BASE_URL")


def test_the_spec_s_url_wins_then_litellm_s_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:9/env")
    assert base_url("openai", "http://127.0.0.1:9/given", found="x") == "http://127.0.0.1:9/given"
    assert base_url("openai", None, found="http://127.0.0.1:9/found") == "http://127.0.0.1:9/found"
    assert base_url("openai", None, module="http://127.0.0.1:9/module") == (
        "http://127.0.0.1:9/module"
    )
    assert base_url("openai", None, default="http://d") == "http://127.0.0.1:9/env"
    monkeypatch.delenv("OPENAI_API_BASE")
    assert base_url("openai", None, default="http://d") == "http://d"
    assert base_url("openai", None) is None


def test_an_environment_endpoint_joins_the_cache_key_a_spec_s_own_does_not(
    monkeypatch: pytest.MonkeyPatch, litellm: Any
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert selectors(ModelSpec("openai/m")) == {"@endpoint": "http://127.0.0.1:9/v1"}
    assert selectors(ModelSpec("openai/m", api_base="http://127.0.0.1:8/v1")) == {}
    monkeypatch.setattr(litellm, "headers", {"Authorization": "Bearer sk-x"}, raising=False)
    hashed = selectors(ModelSpec("openai/m"))["@headers"]
    assert len(hashed) == 64 and "sk-x" not in hashed  # a header may hold a key: hashed


def test_an_in_process_provider_has_no_endpoint_to_resolve(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TARGETFAKE_API_BASE", "http://127.0.0.1:9")
    spec = ModelSpec("targetfake/m")  # a provider name no other test registers
    assert selectors(spec) == {"@endpoint": "http://127.0.0.1:9"}  # not yet ...
    FakeModel(lambda request: "ok", provider="targetfake").install()
    assert selectors(spec) == {}  # ... served in this process now
