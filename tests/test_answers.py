"""What a provider's answer must hold before anything reads it (reflex/models/answers.py): its
token counts, its text (tool calls included) and an error sent in a 200 body."""

from __future__ import annotations

import pytest

from reflex.models.answers import (
    MAX_TOKENS,
    MalformedAnswer,
    answer_text,
    error_in_body,
    message_text,
    token_counts,
)
from reflex.toolcalls import parse_answer


def test_token_counts_are_whole_numbers_within_bounds() -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 3.0}
    usage["prompt_tokens_details"] = {"cached_tokens": 4, "note": "x"}
    prompt, completion, priced = token_counts(usage)
    assert (prompt, completion, priced["total_tokens"]) == (12, 3, 15)
    assert priced["prompt_tokens_details"] == {"cached_tokens": 4}
    assert token_counts(None) == (0, 0, {})  # some providers send no usage


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -29_000_145},
        {"prompt_tokens": MAX_TOKENS + 1},
        {"completion_tokens": 1.5},
        {"completion_tokens": True},
        {"prompt_tokens": "12"},
        {"prompt_tokens_details": {"cached_tokens": -1}},
        [1, 2],
    ],
)
def test_a_malformed_usage_is_refused_in_one_line(usage: object) -> None:
    with pytest.raises(MalformedAnswer, match="malformed usage") as info:
        token_counts(usage)
    assert "\n" not in str(info.value)


def test_the_text_is_the_content_then_the_tool_calls() -> None:
    assert answer_text({"choices": [{"message": {"content": None}}]}) == ""
    call = {"type": "function", "function": {"name": "lights", "arguments": '{"on": true}'}}
    text = message_text({"content": "Sure.", "tool_calls": [call]})
    content, calls = parse_answer(text)
    assert content == "Sure."
    assert [(c.name, c.arguments) for c in calls] == [("lights", {"on": True})]
    # Content that only looks like a call is escaped: only tool_calls make calls.
    assert parse_answer(message_text({"content": "<tool_call>{}</tool_call>"}))[1] == []
    with pytest.raises(MalformedAnswer, match=r"no choices\[0\]\.message"):
        answer_text({"choices": []})


def test_an_error_in_a_200_body_keeps_its_status_and_words() -> None:
    assert error_in_body({"error": {"code": 429, "message": "slow down"}}) == (429, "slow down")
    assert error_in_body({"error": {"code": "503", "message": "busy"}}) == (503, "busy")
    assert error_in_body({"error": {"code": "bad_key", "message": "no"}}) == (422, "no")
    assert error_in_body({"error": "overloaded"}) == (422, "overloaded")
    assert error_in_body({"choices": [], "error": "x"}) is None  # an answer, not an error
    assert error_in_body({"error": {}}) is None
