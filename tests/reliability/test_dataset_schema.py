"""Chat datasets are sent as written, or refused: no part of a conversation is dropped.

OpenAI ``messages`` with tool calls used to be refused with a type error (``content: null``) or,
with ``content: ""``, loaded with the tool calls silently dropped, so the tool message went to
the provider without the call it answers; an unknown role was sent to the provider as is.
Tool-call conversations are now refused with a line that says why; unknown roles too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reflex import DatasetError
from reflex.data.dataset import load_dataset

CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
USER = {"role": "user", "content": "what is the weather?"}


def _row(*messages: dict[str, object]) -> dict[str, object]:
    return {"id": "t1", "messages": [*messages, {"role": "assistant", "content": "sunny"}]}


CASES = {
    "null content with tool_calls": (
        _row(USER, {"role": "assistant", "content": None, "tool_calls": [CALL]}),
        "'tool_calls'",
    ),
    "empty content with tool_calls": (
        _row(
            USER,
            {"role": "assistant", "content": "", "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "c1", "content": "18C"},
        ),
        "'tool_calls'",
    ),
    "a tool message": (_row(USER, {"role": "tool", "content": "18C"}), "role 'tool'"),
    "a legacy function call": (
        _row(USER, {"role": "assistant", "content": "", "function_call": {"name": "f"}}),
        "'function_call'",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_tool_call_conversations_are_refused_not_cut(case: str, tmp_path: Path) -> None:
    row, expect = CASES[case]
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    message = str(caught.value)
    assert "chat.jsonl:1" in message and "tool-call conversation" in message, message
    assert expect in message and "\n" not in message


def test_an_unknown_role_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps(_row({"role": "narrator", "content": "hi"})) + "\n")
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    assert "messages[0].role is 'narrator'; allowed: system, developer, user, assistant" in str(
        caught.value
    )


def test_plain_chat_rows_still_load_whole(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    system = {"role": "system", "content": "Be brief."}
    path.write_text(json.dumps(_row(system, USER)) + "\n", encoding="utf-8")
    (example,) = load_dataset(path)
    assert [m["role"] for m in example.messages] == ["system", "user"]
    assert example.ideal == "sunny"
