"""Tools, tool choice and response formats on every transport (issue 31, the model channel).

As in ``test_wire.py``: the same call is made over the lean transport (``litellm.acompletion``
made to fail) and through LiteLLM (``REFLEX_LEAN_TRANSPORT=0``), on the local endpoint, and what
the endpoint received and what came back are compared. The endpoint answers a request offering
tools as a server with a Hermes tool parser does (``message.tool_calls``), so the answer text
coming back is :func:`reflex.toolcalls.render_answer`'s canonical form on both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from reflex.models import litellm_call
from reflex.models.client import ProviderClient, load_litellm
from reflex.models.litellm_call import Completion, call_once
from reflex.models.offload_protocol import plain_messages, plain_spec
from reflex.models.runner import LoopRunner
from reflex.models.spec import ModelSpec
from reflex.models.wire import lean_route
from reflex.testing.chat import ChatRequest
from reflex.testing.endpoint import serve
from reflex.testing.http import Request
from reflex.toolcalls import ToolCall, parse_answer, render_answer
from tests.test_wire import MODELS, both

HYPOT: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "math_hypot",
        "description": "Euclidean norm of a vector.",
        "parameters": {
            "type": "object",
            "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
            "required": ["x", "y"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}
SCHEMA: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "quantity",
        "schema": {"type": "object", "properties": {"value": {"type": "number"}}},
    },
}
# A conversation with an earlier tool-call turn and its result, sent faithfully.
TURNS: list[dict[str, Any]] = [
    {"role": "system", "content": "Use the tools."},
    {"role": "user", "content": "hypot of 3 and 4?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "math_hypot", "arguments": '{"x": 3, "y": 4}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_0", "content": "5.0"},
    {"role": "user", "content": "and of 4 and 5?"},
]
CALL = ToolCall("math_hypot", {"x": 4, "y": 5})
ANSWER = render_answer("Calling it.", [CALL])


@pytest.fixture(scope="module")
def litellm() -> Any:
    return load_litellm()


@pytest.fixture(autouse=True)
def no_litellm_callbacks(litellm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in litellm_call._LITELLM_CALLBACK_LISTS:
        monkeypatch.setattr(litellm, name, [])


def calling(_: ChatRequest) -> str:
    return ANSWER


def tool_spec(model: str, url: str, **options: Any) -> ModelSpec:
    extra = {"api_key": "sk-test", "top_p": 0.5}
    return ModelSpec(model, api_base=url, max_tokens=32, extra=extra, **options)


def _options(body: Mapping[str, Any]) -> dict[str, Any]:
    return {k: body[k] for k in ("tools", "tool_choice", "response_format") if k in body}


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize(
    "options",
    [
        {"tools": (HYPOT,), "tool_choice": "auto"},
        {
            "tools": (HYPOT,),
            "tool_choice": {"type": "function", "function": {"name": "math_hypot"}},
        },
        {"response_format": SCHEMA},
        {"response_format": {"type": "json_object"}, "tools": (HYPOT,)},
    ],
    ids=["tools-auto", "tools-named", "json-schema", "json-object-and-tools"],
)
def test_tools_and_formats_are_sent_as_litellm_sends_them(
    runner: LoopRunner,
    litellm: Any,
    monkeypatch: pytest.MonkeyPatch,
    model: str,
    options: dict[str, Any],
) -> None:
    captured: list[Request] = []
    with serve(capture=captured, responder=calling) as url:
        spec = tool_spec(model, url, **options)
        assert lean_route(litellm, spec) is not None
        lean, full = both(runner, litellm, monkeypatch, lambda: call_once(litellm, spec, TURNS, 1))
    assert isinstance(lean, Completion) and isinstance(full, Completion), (lean, full)
    lean_body, full_body = (json.loads(r.body) for r in captured)
    assert lean_body == full_body
    sent = _options(lean_body)
    assert set(sent) == set(options)
    if "response_format" in options:
        assert sent["response_format"] == options["response_format"]
    assert [m["role"] for m in lean_body["messages"]] == [m["role"] for m in TURNS]
    assert lean_body["messages"][2]["tool_calls"][0]["function"]["name"] == "math_hypot"
    assert lean_body["messages"][3]["tool_call_id"] == "call_0"
    if "tools" in options:
        assert sent["tools"][0]["function"]["name"] == "math_hypot"
        assert lean.text == full.text == ANSWER  # the answer's tool_calls, rendered canonically
        assert parse_answer(lean.text) == ("Calling it.", [CALL])
    else:  # no tools offered: the same text comes back as content, where it forges no call
        assert lean.text == full.text == render_answer(ANSWER)
        assert parse_answer(lean.text) == (lean.text, [])


def test_a_provider_that_rewrites_tool_schemas_gets_litellms_rewrite_on_the_lean_path(
    runner: LoopRunner, litellm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    captured: list[Request] = []
    with serve(capture=captured, responder=calling) as url:
        spec = tool_spec("hosted_vllm/qwen", url, tools=(HYPOT,))
        both(runner, litellm, monkeypatch, lambda: call_once(litellm, spec, TURNS, 1))
    lean_body, full_body = (json.loads(r.body) for r in captured)
    assert lean_body["tools"] == full_body["tools"]
    function = lean_body["tools"][0]["function"]
    assert "strict" not in function and "additionalProperties" not in function["parameters"]


def test_the_options_are_part_of_the_cache_key() -> None:
    client = ProviderClient()
    plain = ModelSpec("openai/m")
    other = {**HYPOT, "function": {**HYPOT["function"], "description": "Another text."}}
    keys = {
        client.key(spec, TURNS)
        for spec in (
            plain,
            plain.with_tools([HYPOT]),
            plain.with_tools([other]),
            ModelSpec("openai/m", tools=(HYPOT,), tool_choice="required"),
            ModelSpec("openai/m", response_format={"type": "json_object"}),
            ModelSpec("openai/m", response_format=SCHEMA),
        )
    }
    assert len(keys) == 6
    # A plain call's key is what it was before these options existed (old caches still hit).
    assert client.key(plain, TURNS) == client.key(ModelSpec("openai/m", tool_choice="auto"), TURNS)
    assert plain.with_tools([]) is plain


def test_an_answer_with_tool_calls_is_cached_and_replayed_as_its_canonical_text(
    runner: LoopRunner,
) -> None:
    from reflex.models.cache import ResponseCache

    client = ProviderClient(cache=ResponseCache(None))
    with serve(responder=calling) as url:
        spec = tool_spec("openai/gpt-4o-mini", url, tools=(HYPOT,))
        first = runner.run(client.complete(spec, TURNS))
        again = runner.run(client.complete(spec, TURNS))
    assert first.text == again.text == ANSWER and again.cached


def test_client_processes_get_the_options_and_tool_turns_unchanged() -> None:
    spec = ModelSpec("anthropic/x", tools=(HYPOT,), tool_choice="auto", response_format=SCHEMA)
    plain = plain_spec(spec)
    assert plain.request_options() == spec.request_options()
    assert plain_messages(TURNS) == TURNS  # tool_calls lists and a null content kept


def test_a_call_without_tools_sends_no_tool_choice_and_a_text_answer_forges_no_call(
    runner: LoopRunner, litellm: Any
) -> None:
    captured: list[Request] = []
    with serve(capture=captured, responder=calling) as url:
        spec = tool_spec("openai/gpt-4o-mini", url, tool_choice="required")
        done = runner.run(call_once(litellm, spec, TURNS[:2], 1))
    body = json.loads(captured[0].body)
    assert "tool_choice" not in body and "tools" not in body
    assert parse_answer(done.text) == (done.text, [])  # content that looks like a call is text
