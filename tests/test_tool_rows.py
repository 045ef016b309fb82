"""Rows in OpenAI's fine-tuning format for function calling: read whole, reference checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reflex import DatasetError
from reflex.data.dataset import check_run_tools, load_dataset
from reflex.toolcalls import ToolCall, parse_answer

HYPOT = {
    "type": "function",
    "function": {
        "name": "math.hypot",
        "description": "Euclidean norm.",
        "parameters": {
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "required": ["x", "y"],
        },
    },
}
USER = {"role": "user", "content": "Hypotenuse of 4 and 5?"}


def _call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"id": call_id, "type": "function", "function": function}


def _write(tmp_path: Path, *rows: dict[str, Any]) -> Path:
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _final(*calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def test_the_final_assistant_call_is_the_reference_and_tools_go_to_the_example(
    tmp_path: Path,
) -> None:
    row = {"messages": [USER, _final(_call("math.hypot", {"x": 4, "y": 5}))], "tools": [HYPOT]}
    (example,) = load_dataset(_write(tmp_path, row))
    assert example.messages == (USER,)
    assert example.tools == (HYPOT,)
    assert "tools" not in example.metadata
    assert example.ideal is not None
    assert parse_answer(example.ideal) == ("", [ToolCall("math.hypot", {"x": 4, "y": 5})])


def test_earlier_calls_and_tool_results_stay_in_the_conversation(tmp_path: Path) -> None:
    earlier = _final(_call("math.hypot", {"x": 3, "y": 4}, "call_0"), content="Let me see.")
    result = {"role": "tool", "tool_call_id": "call_0", "content": "5.0"}
    turns = [USER, earlier, result, {"role": "user", "content": "Now 4 and 5."}]
    row = {"messages": [*turns, _final(_call("math.hypot", {"x": 4, "y": 5}))], "tools": [HYPOT]}
    (example,) = load_dataset(_write(tmp_path, row))
    assert [dict(m) for m in example.messages] == turns  # whole, ids and all
    assert example.input == "Now 4 and 5."
    records = load_dataset(_write(tmp_path, row)).to_records()
    assert records[0]["tools"] == [HYPOT] and load_dataset(records)[0] == example


def test_an_empty_tool_calls_list_is_a_plain_answer(tmp_path: Path) -> None:
    plain = {"role": "assistant", "content": "Hello.", "tool_calls": []}
    row = {"messages": [USER, plain, {"role": "user", "content": "Hi"}, plain]}
    (example,) = load_dataset(_write(tmp_path, row))
    assert example.ideal == "Hello." and example.messages[1]["content"] == "Hello."


def test_a_final_text_answer_is_a_no_call_reference(tmp_path: Path) -> None:
    row = {
        "messages": [USER, {"role": "assistant", "content": "No tool needed."}],
        "tools": [HYPOT],
    }
    (example,) = load_dataset(_write(tmp_path, row))
    assert example.ideal == "No tool needed." and parse_answer(example.ideal)[1] == []


def test_a_reference_call_to_a_tool_not_offered_names_the_line(tmp_path: Path) -> None:
    good = {"messages": [USER, _final(_call("math.hypot", {"x": 4, "y": 5}))], "tools": [HYPOT]}
    bad = {"messages": [USER, _final(_call("math.sqrt", {"x": 4}))], "tools": [HYPOT]}
    path = _write(tmp_path, good, bad)
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:2: the reference calls 'math.sqrt'"), message
    assert "'math.hypot'" in message and "\n" not in message


def test_the_runs_tools_check_rows_without_their_own(tmp_path: Path) -> None:
    row = {"messages": [USER, _final(_call("math.sqrt", {"x": 4}))]}
    path = _write(tmp_path, row)
    assert load_dataset(path)[0].tools == ()  # tools unknown at load time: nothing to check
    with pytest.raises(DatasetError, match=r"calls\.jsonl:1: the reference calls 'math\.sqrt'"):
        load_dataset(path, tools=[HYPOT])
    plain = {"id": "p1", "input": "4 and 5", "ideal": _call_text("math.sqrt")}
    with pytest.raises(DatasetError, match=r":1: the reference calls 'math\.sqrt'"):
        load_dataset(_write(tmp_path, plain), tools=[HYPOT])


def _call_text(name: str) -> str:
    return f'<tool_call>{{"name": "{name}", "arguments": {{}}}}</tool_call>'


@pytest.mark.parametrize(
    ("tools", "expect"),
    [
        ({"name": "f"}, "not a list"),
        ([{"type": "function", "function": {"description": "no name"}}], "[0]"),
        (
            [{"type": "function", "function": {"name": "f", "parameters": {"type": "nope"}}}],
            "schema",
        ),
    ],
)
def test_a_bad_tools_field_names_the_line(tmp_path: Path, tools: object, expect: str) -> None:
    row = {"messages": [USER, {"role": "assistant", "content": "x"}], "tools": tools}
    path = _write(tmp_path, row)
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    assert str(caught.value).startswith(f"{path}:1: ") and expect in str(caught.value)


def test_call_arguments_that_are_not_a_json_object_are_refused(tmp_path: Path) -> None:
    call = {"id": "c", "type": "function", "function": {"name": "math.hypot", "arguments": "x=4"}}
    row = {"messages": [USER, _final(call)], "tools": [HYPOT]}
    with pytest.raises(DatasetError, match=r":1: messages\[1\]\.tool_calls\[0\]\.function\."):
        load_dataset(_write(tmp_path, row))


def test_a_loaded_dataset_is_checked_against_the_runs_tools_by_line(tmp_path: Path) -> None:
    own = {"messages": [USER, _final(_call("math.hypot", {"x": 4, "y": 5}))], "tools": [HYPOT]}
    other = {"id": "r2", "messages": [USER, _final(_call("math.sqrt", {"x": 4}))]}
    path = _write(tmp_path, own, other)
    rows = load_dataset(path)
    check_run_tools(rows, None)  # no run tools: nothing to check
    sqrt = {"type": "function", "function": {"name": "math.sqrt"}}
    check_run_tools(rows, [sqrt])  # row 1 offers its own tools
    with pytest.raises(DatasetError) as caught:
        check_run_tools(rows, [HYPOT])
    assert str(caught.value) == (
        f"{path}:2: the reference calls 'math.sqrt', which is not among the tools "
        "offered ('math.hypot'); fix the call's name or add the tool"
    )
    in_memory = load_dataset([other])
    with pytest.raises(DatasetError, match=r"^row 'r2': the reference calls 'math\.sqrt'"):
        check_run_tools(in_memory, [HYPOT])
