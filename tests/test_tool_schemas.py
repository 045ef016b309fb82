"""reflex.data.tool_schemas: tools files, response formats and tool choices, one line each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reflex.data.tool_schemas import (
    check_response_format,
    check_tool_choice,
    check_tools,
    read_json_file,
)
from reflex.errors import ConfigurationError

HYPOT: dict[str, Any] = {
    "name": "math.hypot",
    "description": "Euclidean norm",
    "parameters": {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"],
    },
}


def _refused(call: Any, *words: str) -> str:
    with pytest.raises(ConfigurationError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message
    return message


def test_tools_in_both_forms_become_openai_tool_schemas() -> None:
    full = [{"type": "function", "function": HYPOT}]
    assert check_tools(full, "t.json") == full
    assert check_tools([HYPOT], "t.json") == full  # the bare (BFCL / legacy) function form
    assert check_tools({"tools": full}, "t.json") == full
    assert check_tools([{"name": "now"}], "t.json") == [
        {"type": "function", "function": {"name": "now"}}
    ]


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ({"name": "f"}, ["t.json:", "not a list"]),
        ([], ["empty"]),
        (["f"], ["tools[0]", "not a function schema"]),
        ([{"type": "retrieval"}], ["tools[0].type", "function"]),
        ([{"name": ""}], ["tools[0].name"]),
        ([{"name": "f"}, {"name": "f"}], ["tools[1]", "repeats", "'f'"]),
        ([{"name": "f", "description": 3}], ["description"]),
        (
            [{"name": "f", "parameters": {"type": "dict", "properties": {}}}],
            ["tools[0].parameters of 'f'", "not valid JSON Schema", "dict"],
        ),
        (
            [{"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}],
            ["tools[0].function.parameters", "'string'", "object"],
        ),
        (
            [
                {
                    "name": "f",
                    "parameters": {"type": "object", "properties": {"x": {"minimum": "a"}}},
                }
            ],
            ["properties.x.minimum"],
        ),
    ],
)
def test_a_tools_value_that_is_not_a_list_of_function_schemas_is_one_line(
    value: object, words: list[str]
) -> None:
    _refused(lambda: check_tools(value, "t.json"), "t.json", *words)


def test_response_formats() -> None:
    assert check_response_format({"type": "json_object"}, "f") == {"type": "json_object"}
    schema = {"type": "object", "properties": {"unit": {"type": "string"}}}
    wrapped = {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
    assert check_response_format(schema, "f") == wrapped  # a bare JSON Schema
    named = {"type": "json_schema", "json_schema": {"name": "q", "schema": schema, "strict": True}}
    assert check_response_format(named, "f") == named


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ([], ["not an object"]),
        ({"type": "xml"}, ["'xml'"]),
        ({"type": "json_schema"}, ["json_schema.schema"]),
        ({"type": "json_schema", "json_schema": {"schema": {"type": "strin"}}}, ["'strin'"]),
        (
            {"type": "json_schema", "json_schema": {"schema": {}, "strict": "yes"}},
            ["strict"],
        ),
        ({"type": "object", "properties": {"a": {"type": 5}}}, ["not valid JSON Schema"]),
    ],
)
def test_a_response_format_that_is_not_json_schema_is_one_line(
    value: object, words: list[str]
) -> None:
    _refused(lambda: check_response_format(value, "fmt.json"), "fmt.json", *words)


def test_tool_choice() -> None:
    tools = check_tools([HYPOT], "t")
    assert check_tool_choice(None, tools, "c") is None
    assert check_tool_choice("Required", tools, "c") == "required"
    named = {"type": "function", "function": {"name": "math.hypot"}}
    assert check_tool_choice("math.hypot", tools, "c") == named
    assert check_tool_choice(named, tools, "c") == named
    assert check_tool_choice("any.name", None, "c")  # the rows offer their own: not checked
    _refused(lambda: check_tool_choice("math.pow", tools, "--tool-choice"), "offered: math.hypot")
    _refused(lambda: check_tool_choice(3, tools, "--tool-choice"), "--tool-choice")


def test_json_files(tmp_path: Path) -> None:
    good = tmp_path / "tools.json"
    good.write_text(json.dumps([HYPOT]))
    assert read_json_file(good, "tools file") == [HYPOT]
    bad = tmp_path / "bad.json"
    bad.write_text('[\n{"name": "f",\n}\n]')
    _refused(lambda: read_json_file(bad, "tools file"), f"{bad}:3", "not valid JSON")
    _refused(lambda: read_json_file(tmp_path / "none.json", "tools file"), "not found")
