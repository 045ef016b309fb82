"""The chat-completions wire format of the local test endpoint (reflex/testing/chat.py): the
request's system and last user turn, and the answer body, tool calls as a Hermes parser returns
them when tools were offered."""

from __future__ import annotations

from reflex.models.answers import message_text, token_counts
from reflex.testing.chat import ChatRequest, answer_message, completion, echo
from reflex.toolcalls import ToolCall, render_answer

MESSAGES = (
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "first"},
    {"role": "assistant", "content": "ok"},
    {"role": "user", "content": "turn the lights on"},
)


def test_a_request_s_system_prompt_and_last_user_turn() -> None:
    request = ChatRequest("m", MESSAGES)
    assert (request.system, request.user, echo(request)) == (
        "Be brief.",
        "turn the lights on",
        "turn the lights on",
    )
    assert ChatRequest("m", ()).system == "" and ChatRequest("m", ()).user == ""


def test_the_answer_body_counts_words_unless_told() -> None:
    body = completion(ChatRequest("local/m", MESSAGES), "fine then")
    assert body["model"] == "local/m" and body["choices"][0]["finish_reason"] == "stop"
    assert token_counts(body["usage"])[:2] == (8, 2)  # words of every message, of the answer
    told = completion(ChatRequest("local/m", MESSAGES), "fine", usage=(100, 3))
    assert told["usage"]["total_tokens"] == 103


def test_tool_calls_are_the_message_s_tool_calls_only_when_tools_were_offered() -> None:
    text = render_answer("On it.", [ToolCall("lights", {"on": True})])
    message, finish = answer_message(text, tools_offered=True)
    assert finish == "tool_calls" and message["content"] == "On it."
    assert message_text(message) == text  # what the client reads back is the same answer
    plain, finish = answer_message(text, tools_offered=False)
    assert finish == "stop" and plain == {"role": "assistant", "content": text}
    only_call, _ = answer_message(render_answer("", [ToolCall("lights", {})]), True)
    assert only_call["content"] is None
