"""Tools and JSON-schema answers on the embedded model (reflex.models.local_tools).

Unit tests need no model; the two ``real_model`` tests run Qwen (skipped when its packages or
llama-cpp-python are absent): a tool call rendered through Qwen's own chat template, and an
answer held to a JSON Schema by llama-cpp-python's grammar.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from reflex.errors import ConfigurationError
from reflex.models import local
from reflex.models.client import ModelSpec, ProviderClient
from reflex.models.local_tools import answer_calls, request_options, template_messages
from reflex.models.runner import LoopRunner
from reflex.toolcalls import ToolCall, parse_answer

AREA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "calculate_triangle_area",
        "description": "Calculate the area of a triangle given its base and height.",
        "parameters": {
            "type": "object",
            "properties": {
                "base": {"type": "integer", "description": "The base of the triangle."},
                "height": {"type": "integer", "description": "The height of the triangle."},
            },
            "required": ["base", "height"],
        },
    },
}
QUANTITIES: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"value": {"type": "number"}, "unit": {"type": "string"}},
        "required": ["value", "unit"],
    },
}


def _result(content: str | None) -> dict[str, Any]:
    message = {"role": "assistant", "content": content}
    return {"choices": [{"index": 0, "finish_reason": "stop", "message": message}]}


def test_well_formed_tool_call_blocks_become_tool_calls_as_hermes_parsers_do() -> None:
    text = 'Sure.\n<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>'
    result = answer_calls(_result(text), {"tools": [AREA]})
    choice = result["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Sure."
    assert choice["message"]["tool_calls"][0]["function"] == {
        "name": "f",
        "arguments": '{"x": 1}',
    }


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "f", "arguments": {"x": 1}</tool_call>',  # broken JSON
        '<tool_call>{"arguments": {}}</tool_call>',  # no name
        '```json\n{"name": "f", "arguments": {}}\n```',  # another shape: text for the metric
        '<tool_call>{"name": "f"}',  # never closed
    ],
)
def test_any_other_shape_stays_text(text: str) -> None:
    result = answer_calls(_result(text), {"tools": [AREA]})
    assert result["choices"][0]["message"] == {"role": "assistant", "content": text}


def test_no_calls_are_parsed_without_tools_or_with_tool_choice_none() -> None:
    text = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    assert "tool_calls" not in answer_calls(_result(text), {})["choices"][0]["message"]
    none = {"tools": [AREA], "tool_choice": "none"}
    assert "tool_calls" not in answer_calls(_result(text), none)["choices"][0]["message"]


def test_request_options_for_llama_cpp() -> None:
    bare = {"type": "function", "function": {"name": "now"}}
    options = request_options({"tools": [bare], "tool_choice": "auto"})
    assert options["tools"][0]["function"]["parameters"] == {"type": "object", "properties": {}}
    assert options["tool_choice"] == "auto"
    schema = {"type": "json_schema", "json_schema": {"name": "q", "schema": QUANTITIES}}
    assert request_options({"response_format": schema}) == {
        "response_format": {"type": "json_object", "schema": QUANTITIES}
    }
    json_mode = request_options({"response_format": {"type": "json_object"}})
    assert json_mode == {"response_format": {"type": "json_object"}}
    assert request_options({"response_format": {"type": "text"}, "tool_choice": "auto"}) == {}


def test_required_with_one_function_is_that_named_choice_with_several_it_is_passed_on() -> None:
    named = {"type": "function", "function": {"name": "calculate_triangle_area"}}
    assert request_options({"tools": [AREA], "tool_choice": "required"})["tool_choice"] == named
    other = {"type": "function", "function": {"name": "now"}}
    several = request_options({"tools": [AREA, other], "tool_choice": "required"})
    assert several["tool_choice"] == "required"


def test_tool_call_turns_reach_the_template_with_their_arguments_as_objects() -> None:
    turns: list[dict[str, object]] = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "42"},
    ]
    sent = template_messages(turns)
    assert sent[0] is turns[0] and sent[2] is turns[2]
    assert sent[1]["tool_calls"] == [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}
    ]
    assert turns[1]["tool_calls"][0]["function"]["arguments"] == '{"x": 1}'  # type: ignore[index]


# --- real model tests ------------------------------------------------------------------------


@pytest.fixture
def qwen(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed")
    monkeypatch.delenv("REFLEX_LOCAL_MODEL", raising=False)
    local.register_local_provider()
    try:
        local.qwen_model_path()
    except ConfigurationError as exc:
        if not str(exc).startswith(local.INSTALL_HINT):
            raise
        pytest.skip(str(exc))
    yield


QUESTION = [
    {"role": "system", "content": "Call the right function."},
    {"role": "user", "content": "Find the area of a triangle with a base of 10 and height of 5."},
]


@pytest.mark.real_model
def test_qwen_calls_a_tool_offered_through_its_chat_template(qwen: None) -> None:
    client = ProviderClient(cache=None)
    named = {"type": "function", "function": {"name": "calculate_triangle_area"}}
    spec = ModelSpec("local/default", max_tokens=60, tools=(AREA,), tool_choice=named)
    answer = LoopRunner.shared().run(client.complete(spec, QUESTION)).text
    assert parse_answer(answer) == (
        "",
        [ToolCall("calculate_triangle_area", {"base": 10, "height": 5})],
    )
    # Left free, Qwen 0.5B answers this in a fenced JSON block: text, no call (issue 31).
    free = ModelSpec("local/default", max_tokens=60, tools=(AREA,), tool_choice="auto")
    text = LoopRunner.shared().run(client.complete(free, QUESTION)).text
    _, calls = parse_answer(text)
    assert calls == [] or calls[0].name == "calculate_triangle_area"
    assert "calculate_triangle_area" in text  # the template showed it the function


@pytest.mark.real_model
def test_qwen_answers_in_a_json_schema(qwen: None) -> None:
    from jsonschema import validate

    client = ProviderClient(cache=None)
    fmt = {"type": "json_schema", "json_schema": {"name": "quantities", "schema": QUANTITIES}}
    spec = ModelSpec("local/default", max_tokens=80, response_format=fmt)
    messages = [
        {"role": "system", "content": "List the quantities in the sentence as JSON."},
        {"role": "user", "content": "I want two meters of cotton for £2,000"},
    ]
    answer = LoopRunner.shared().run(client.complete(spec, messages)).text
    validate(json.loads(answer), QUANTITIES)  # the grammar held it to the schema
    plain = LoopRunner.shared().run(
        client.complete(ModelSpec("local/default", max_tokens=80), messages)
    )
    assert plain.text != answer  # without the format the same question is answered otherwise
