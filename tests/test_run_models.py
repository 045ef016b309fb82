"""The builder's model side (reflex/models/run_models.py): which models a run calls, and how."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from reflex import ConfigurationError, PromptOptimizer
from reflex.models.run_models import ModelSide

ROUTER = {"model_list": [{"model_name": "tagger", "litellm_params": {"model": "fake/task"}}]}


def test_api_base_and_base_url_are_one_setting(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/v1"
    a = PromptOptimizer().add_provider("fake/task", base_url=url)
    b = a.set_reasoning_model("fake/reasoner", api_base=url)
    assert b._config.api_base == url == b._config.reasoning_base_url
    old = PromptOptimizer().set_reasoning_model("fake/reasoner", base_url=url)
    assert old._config.reasoning_base_url == url  # the older name still works
    with pytest.raises(Exception, match="give the endpoint once"):
        PromptOptimizer().add_provider("fake/task", api_base=url, base_url="http://other/v1")


def test_models_add_up_and_a_bare_router_name_is_routed_once_a_router_is_set() -> None:
    side = ModelSide().add_provider("openai", "gpt-4o-mini").add_model("fake/task")
    assert side._config.models == ["openai/gpt-4o-mini", "fake/task"]
    with pytest.raises(ConfigurationError, match="router/tagger"):
        side.add_provider("tagger")  # no router set: a bare name says how to write it
    routed = PromptOptimizer().set_router(ROUTER).add_provider("tagger")
    assert routed.set_reasoning_model("tagger")._config.models == ["router/tagger"]
    assert routed._config.reasoning_model == "router/tagger"
    assert routed.clone().add_provider("other/model")._config.models[-1] == "other/model"


def test_the_reasoning_model_follows_the_default_strategy_until_one_is_named() -> None:
    side = ModelSide()
    assert side._config.strategy == "auto"  # no reasoning model: reasoning-free
    assert side.set_reasoning_model("fake/reasoner")._config.strategy == "iterative"
    opt = PromptOptimizer().set_strategy("fewshot").set_reasoning_model("fake/reasoner")
    assert opt._config.strategy == "fewshot"  # named: kept


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.set_source_model(" "), "source model must be a model name"),
        (lambda s: s.set_retry_window(0), "retry_window=0"),
        (lambda s: s.set_max_response_mb(float("inf")), "max_response_mb=inf"),
        (lambda s: s.set_max_workers(0), "max_workers=0"),
        (lambda s: s.set_reasoning_model("nomodel"), "'nomodel'"),
    ],
)
def test_a_bad_model_setting_is_one_line_naming_the_value(
    call: Callable[[ModelSide], ModelSide], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message) as info:
        call(ModelSide())
    assert "\n" not in str(info.value)


def test_prices_and_the_cache_url_are_settings_of_their_own() -> None:
    side = ModelSide().set_price("openai/my-vllm", 0.2, 0.6).set_price("fake/task", 1, 2)
    assert side._config.prices == {"openai/my-vllm": (0.2, 0.6), "fake/task": (1, 2)}
    assert side.set_cache_url("redis://127.0.0.1:6379/0")._config.cache_url.startswith("redis")
