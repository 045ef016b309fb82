"""The OpenAI chat-completions wire format the local test endpoint speaks.

``ChatRequest`` is what a client asked (model, messages, the other body fields); a
``Responder`` turns it into the answer text (``echo`` by default); ``completion`` builds the
response body with its usage numbers. :mod:`reflex.testing.endpoint` serves them.

A request that offers ``tools`` is answered as a server with a tool-call parser answers (vLLM's
Hermes parser): the answer text's ``<tool_call>{...}</tool_call>`` lines
(:func:`reflex.toolcalls.render_answer`'s form) become the message's ``tool_calls``, the rest
its content (null when empty), ``finish_reason`` ``tool_calls``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from reflex.data.json_types import JSONDict, JSONValue
from reflex.toolcalls import parse_answer, to_openai

__all__ = ["ChatRequest", "Reply", "Responder", "answer_message", "completion", "echo"]


@dataclass(frozen=True)
class ChatRequest:
    """What the endpoint was asked: model, messages and the other body fields."""

    model: str
    messages: tuple[JSONDict, ...]
    params: JSONDict = field(default_factory=dict)

    @property
    def system(self) -> str:
        return next((str(m.get("content", "")) for m in self.messages if _is(m, "system")), "")

    @property
    def user(self) -> str:
        return next(
            (str(m.get("content", "")) for m in reversed(self.messages) if _is(m, "user")), ""
        )


def _is(message: JSONDict, role: str) -> bool:
    return message.get("role") == role


Responder = Callable[[ChatRequest], str]


@dataclass(frozen=True)
class Reply:
    """A scripted HTTP answer (status, body, headers) sent instead of a completion."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def echo(request: ChatRequest) -> str:
    """The default answer: the last user message, verbatim."""
    return request.user


def answer_message(text: str, tools_offered: bool) -> tuple[JSONDict, str]:
    """(the assistant message, its finish reason) for the answer ``text``: with tools offered,
    its ``<tool_call>`` lines are the message's ``tool_calls`` (a Hermes tool parser's answer)."""
    content, calls = parse_answer(text) if tools_offered else (text, [])
    if not calls:
        return {"role": "assistant", "content": text}, "stop"
    called: list[JSONValue] = [dict(call) for call in to_openai(calls)]
    return {"role": "assistant", "content": content or None, "tool_calls": called}, "tool_calls"


def completion(request: ChatRequest, text: str, usage: tuple[int, int] | None = None) -> JSONDict:
    """The chat-completion body answering ``request`` with ``text``; ``usage`` is (prompt,
    completion) tokens, else words counted."""
    if usage is not None:
        prompt_tokens, completion_tokens = usage
    else:
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in request.messages)
        completion_tokens = len(text.split())
    message, finish = answer_message(text, bool(request.params.get("tools")))
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
