"""Provider mistakes caught before the first call (reflex/models/preflight.py): a provider
LiteLLM does not know, with the nearest name; a missing API key, naming the variable; neither
asked of in-process providers."""

from __future__ import annotations

from typing import Any

import pytest

from reflex.errors import ConfigurationError
from reflex.judging.judge import LLMJudge
from reflex.models.preflight import check_models, judge_specs
from reflex.models.spec import ModelSpec
from reflex.testing import FakeModel


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch, litellm: Any) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(litellm, "api_key", None, raising=False)
    monkeypatch.setattr(litellm, "openai_key", None, raising=False)


def test_a_missing_key_names_the_variable_before_any_call(
    no_keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigurationError, match=r"openai/m: .*set OPENAI_API_KEY") as info:
        check_models([ModelSpec("openai/m")])
    assert "nothing was called" in str(info.value)
    local = ModelSpec("openai/m", api_base="http://127.0.0.1:8000/v1")
    with pytest.raises(ConfigurationError, match="a local server that needs no key"):
        check_models([local])
    with pytest.raises(ConfigurationError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        check_models([ModelSpec("gemini/g")])
    monkeypatch.setenv("GOOGLE_API_KEY", "k")
    check_models([ModelSpec("gemini/g")])  # either variable will do


def test_an_unknown_provider_is_refused_with_the_nearest_name(no_keys: None) -> None:
    with pytest.raises(ConfigurationError, match="did you mean anthropic/claude") as info:
        check_models([ModelSpec("antropic/claude")])
    assert "unknown provider 'antropic'" in str(info.value)


def test_in_process_providers_need_neither_a_key_nor_litellm(no_keys: None) -> None:
    FakeModel(provider="preflightfake").install()
    check_models([ModelSpec("preflightfake/m")])


def test_the_judge_models_are_checked_too() -> None:
    judge = LLMJudge("openai/judge")
    assert judge_specs([judge, object()]) == [judge.judge]
