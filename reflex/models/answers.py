"""What a provider's answer must hold before anything reads it, the same on both transports.

An answer whose ``choices`` or ``usage`` is malformed (a negative or absurd token count
included) raises :class:`MalformedAnswer`, retried like a broken body and then reported in one
line: such numbers must never reach the cache, the ledger or a price (a total of -29,000,145
tokens once lowered a priced run's spend; ``prompt_tokens = 10**30`` overflowed the cache).
A 200 answer that carries ``{"error": {...}}`` instead is the provider's own failure, classified
by its status and kept in its own words (:func:`error_in_body`).

The answer text is one string on both transports (and the Router's): the message's content,
then its ``tool_calls`` as :func:`reflex.toolcalls.render_answer` writes them, so samples, the
cache, the record, trackers and the report keep the calls unchanged (:func:`message_text`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from reflex.toolcalls import TOOL_CALL_OPEN, from_openai, render_answer

__all__ = [
    "MAX_TOKENS",
    "MalformedAnswer",
    "answer_text",
    "error_in_body",
    "message_text",
    "token_counts",
]

# More tokens than any model's context window holds, far below what sqlite's INTEGER holds.
MAX_TOKENS = 10**9
_DETAILS = ("prompt_tokens_details", "completion_tokens_details")


class MalformedAnswer(Exception):
    """A 200 answer without the parts every answer has (retried like a malformed body)."""


def _count(usage: Mapping[str, Any], name: str) -> int:
    value = usage.get(name)
    if value is None:
        return 0
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise MalformedAnswer(
            f"the provider's answer has a malformed usage: {name}={shown} (token counts are "
            f"whole numbers from 0 to {MAX_TOKENS:,})"
        )
    return value


def token_counts(usage: object) -> tuple[int, int, dict[str, Any]]:
    """(prompt tokens, completion tokens, the usage to price) of an answer's ``usage``.

    A missing usage counts 0 tokens (some providers send none); anything else must be a
    mapping of whole token counts from 0 to :data:`MAX_TOKENS`, details included.
    """
    if usage is None:
        return 0, 0, {}
    if not isinstance(usage, Mapping):
        raise MalformedAnswer(
            f"the provider's answer has a malformed usage: a {type(usage).__name__}, not an object"
        )
    prompt_tokens = _count(usage, "prompt_tokens")
    completion_tokens = _count(usage, "completion_tokens")
    priced: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
    }
    priced["total_tokens"] = prompt_tokens + completion_tokens
    for name in _DETAILS:
        details = usage.get(name)
        if isinstance(details, Mapping):
            numbers = {k: v for k, v in details.items() if isinstance(v, (int, float))}
            priced[name] = {key: _count(numbers, key) for key in numbers}
    return prompt_tokens, completion_tokens, priced


def answer_text(payload: object) -> str:
    """``choices[0].message.content`` of a chat-completion body ("" for a null content)."""
    choices = payload.get("choices") if isinstance(payload, Mapping) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, Mapping) else None
    if not isinstance(message, Mapping):
        raise MalformedAnswer("the provider's answer has no choices[0].message")
    return message_text(message)


def _plain(value: object) -> object:
    """A LiteLLM (pydantic) object as plain values; mappings and lists walked through."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def message_text(message: object) -> str:
    """The answer string of a chat message (a JSON object, or LiteLLM's ``Message``): its
    ``content`` ("" for null; a literal ``<tool_call>`` in it escaped), then one canonical line
    per entry of its ``tool_calls``."""
    if isinstance(message, Mapping):
        content, calls = message.get("content"), message.get("tool_calls")
    else:
        content, calls = getattr(message, "content", None), getattr(message, "tool_calls", None)
    text = "" if content is None else str(content)
    if not calls:  # content that looks like a call is escaped: only tool_calls make calls
        return render_answer(text) if TOOL_CALL_OPEN in text else text
    plain = _plain(calls)
    if not isinstance(plain, Sequence) or isinstance(plain, str):
        raise MalformedAnswer("the provider's answer has a malformed tool_calls (not a list)")
    entries = [entry for entry in plain if isinstance(entry, Mapping)]
    return render_answer(text, from_openai(entries))


def error_in_body(payload: object) -> tuple[int, str] | None:
    """(status, message) of a 200 answer that holds the provider's error instead of choices.

    The status is the error's numeric ``code`` when it is an HTTP error status, else 422, as
    LiteLLM reads such an answer; the message is the provider's own.
    """
    if not isinstance(payload, Mapping) or payload.get("choices") is not None:
        return None
    error = payload.get("error")
    if not error:
        return None
    if not isinstance(error, Mapping):
        return 422, str(error)[:500]
    code, message = error.get("code"), error.get("message")
    if not message and code is None:
        return None
    status = code if isinstance(code, int) and not isinstance(code, bool) else None
    if isinstance(code, str) and code.isdigit():
        status = int(code)
    if status is None or not 400 <= status <= 599:
        status = 422
    return status, str(message or error)[:500]
