"""The lean transport's request body (reflex.models.wire_body), made by LiteLLM's own provider
configs: the body without messages, a request's tools and formats, tool-call turns."""

from __future__ import annotations

from typing import Any

import pytest

from reflex.models import wire_body
from reflex.models.spec import ModelSpec
from reflex.models.wire import lean_route
from reflex.models.wire_body import Route, body_params, chat_config, sent_messages, with_options
from tests.test_wire_tools import HYPOT, TURNS


def vllm(**options: Any) -> ModelSpec:
    return ModelSpec(
        "hosted_vllm/qwen", api_base="http://127.0.0.1:9/v1", extra={"api_key": "k"}, **options
    )


@pytest.fixture
def route(litellm: Any) -> Route:
    found = lean_route(litellm, vllm())
    assert found is not None
    return found


@pytest.mark.usefixtures("litellm")
def test_body_params_is_the_body_less_messages_with_extra_body_merged() -> None:
    config = chat_config("m", "openai")
    optional = {"max_tokens": 32, "stream": False, "extra_body": {"top_k": 5}}
    assert body_params(config, "m", optional, {}) == {"model": "m", "max_tokens": 32, "top_k": 5}
    assert body_params(config, "m", {"extra_body": "top_k=5"}, {}) is None  # not a JSON object


@pytest.mark.usefixtures("litellm")
def test_a_provider_that_rewrites_messages_gets_no_lean_body() -> None:
    config = chat_config("claude-x", "anthropic")  # system messages leave ``messages``
    assert body_params(config, "claude-x", {"max_tokens": 32}, {"x-api-key": "k"}) is None


def test_with_options_adds_tools_as_the_providers_config_sends_them(route: Route) -> None:
    assert with_options(route, vllm()) is route  # nothing to add
    offered = with_options(route, vllm(tools=(HYPOT,), tool_choice="auto"))
    assert offered is not None and offered.url == route.url and offered.headers == route.headers
    assert offered.params["tool_choice"] == "auto" and offered.params["model"] == "qwen"
    [tool] = offered.params["tools"]  # type: ignore[misc]
    assert "strict" not in tool["function"]  # vLLM's config drops them, as LiteLLM sends it
    assert "additionalProperties" not in tool["function"]["parameters"]
    again = with_options(route, vllm(tools=(HYPOT,), tool_choice="auto"))
    assert again is not None and again.params is offered.params  # made once per options


def test_options_that_are_not_json_take_litellms_full_path(
    route: Route, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wire_body, "_WITH_OPTIONS", {})
    odd = {**HYPOT, "function": {**HYPOT["function"], "description": object()}}
    assert with_options(route, vllm(tools=(odd,))) is None
    assert wire_body._WITH_OPTIONS == {}  # nothing was remembered for it


def test_text_messages_are_sent_as_they_are(route: Route) -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    sent = sent_messages(route, messages)
    assert sent == messages and sent[0] is not messages[0]  # copies: the caller's stay theirs


def test_a_tool_call_turn_is_sent_as_litellm_sends_it(route: Route) -> None:
    sent = sent_messages(route, TURNS)  # text, a tool-call turn, its result, text
    assert "content" not in sent[2]  # the null content is dropped
    assert sent[2]["tool_calls"] == TURNS[2]["tool_calls"]
    assert [sent[i] for i in (0, 1, 3, 4)] == [TURNS[i] for i in (0, 1, 3, 4)]
    assert TURNS[2]["content"] is None  # the caller's message is left as it was
