"""Chat datasets are sent as written, or refused: no part of a conversation is dropped.

OpenAI ``messages`` with tool calls used to be refused with a type error (``content: null``) or,
with ``content: ""``, loaded with the tool calls silently dropped, so the tool message went to
the provider without the call it answers; an unknown role was sent to the provider as is.
They were then refused with a line that says why; since issue 31 they are kept whole (calls,
results and their ids), and only malformed tool turns and unknown roles are refused.
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


KEPT = {
    "null content with tool_calls": _row(
        USER,
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "18C"},
    ),
    "empty content with tool_calls": _row(
        USER,
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "18C"},
    ),
}


@pytest.mark.parametrize("case", list(KEPT))
def test_tool_call_conversations_are_kept_whole(case: str, tmp_path: Path) -> None:
    row = KEPT[case]
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    (example,) = load_dataset(path)
    assert [dict(m) for m in example.messages] == row["messages"][:-1]  # type: ignore[index]
    assert example.ideal == "sunny"


REFUSED = {
    "a tool message without its call id": (
        _row(USER, {"role": "tool", "content": "18C"}),
        "needs a string 'tool_call_id'",
    ),
    "a legacy function call": (
        _row(USER, {"role": "assistant", "content": "", "function_call": {"name": "f"}}),
        "legacy 'function_call'",
    ),
    "a call without a function name": (
        _row(USER, {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}),
        "messages[1].tool_calls[0] must be",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_malformed_tool_turns_are_refused_naming_the_line(case: str, tmp_path: Path) -> None:
    row, expect = REFUSED[case]
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:1: ") and expect in message, message
    assert "\n" not in message


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
