"""Tool calls as answer text: one canonical rendering, and its exact inverse.

Everything downstream of the model channel (metrics, the cache, the record, trackers, the HTML
report, reasoning prompts) carries an answer as one string. An answer that calls tools is that
string too: its text content, then one line per call in the Hermes / Qwen form models are trained
on and reasoning models read::

    <tool_call>{"name": "math.hypot", "arguments": {"x": 4, "y": 5}}</tool_call>

Invariants (tested as properties):

- ``parse_answer(render_answer(content, calls)) == (escaped content, calls)`` for every content
  and every list of calls: the calls an answer held are exactly the calls a metric reads back.
- Text content never forges a call: a literal ``<tool_call>`` in content is escaped by
  :func:`render_answer`, so only a real ``tool_calls`` field (or the embedded model's own
  ``<tool_call>`` output, parsed as vLLM's Hermes parser does) makes a call.
- ``arguments`` are JSON values (a mapping); arguments a provider sent as text that is not a JSON
  object are kept under the single key ``"_raw"`` so the metric can say so, never dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from reflex.data.json_types import JSONDict, JSONValue

__all__ = [
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "ToolCall",
    "from_openai",
    "parse_answer",
    "render_answer",
    "to_openai",
]

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
_ESCAPED_OPEN = "&lt;tool_call>"
_CALL = re.compile(
    re.escape(TOOL_CALL_OPEN) + r"\s*(\{.*?\})\s*" + re.escape(TOOL_CALL_CLOSE), re.DOTALL
)


@dataclass(frozen=True)
class ToolCall:
    """One function call: the function's name and its arguments (JSON values)."""

    name: str
    arguments: Mapping[str, JSONValue] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "arguments": dict(self.arguments)}, sort_keys=True)


def _arguments(raw: object) -> JSONDict:
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        try:
            value = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            return {"_raw": raw}
        return dict(value) if isinstance(value, dict) else {"_raw": raw}
    return {} if raw is None else {"_raw": json.dumps(raw)}


def from_openai(tool_calls: Sequence[Mapping[str, object]] | None) -> list[ToolCall]:
    """Calls from an OpenAI ``message.tool_calls`` list (``{"function": {"name", "arguments"}}``
    each, ``arguments`` a JSON string or an object); entries without a name are skipped."""
    calls: list[ToolCall] = []
    for entry in tool_calls or ():
        function = entry.get("function", entry)
        if not isinstance(function, Mapping) or not function.get("name"):
            continue
        calls.append(ToolCall(str(function["name"]), _arguments(function.get("arguments"))))
    return calls


def to_openai(calls: Sequence[ToolCall]) -> list[JSONDict]:
    """OpenAI ``tool_calls`` entries for ``calls`` (ids ``call_0``, ``call_1``, ...)."""
    return [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
        }
        for i, c in enumerate(calls)
    ]


def render_answer(content: str | None, calls: Sequence[ToolCall] = ()) -> str:
    """The answer string for a message's text ``content`` and its tool ``calls``."""
    text = (content or "").replace(TOOL_CALL_OPEN, _ESCAPED_OPEN)
    lines = [f"{TOOL_CALL_OPEN}{c.to_json()}{TOOL_CALL_CLOSE}" for c in calls]
    if not lines:
        return text
    return "\n".join([text.rstrip("\n"), *lines]) if text.strip() else "\n".join(lines)


def parse_answer(text: str) -> tuple[str, list[ToolCall]]:
    """``(content, calls)`` of an answer string: every well-formed ``<tool_call>{...}</tool_call>``
    whose JSON has a string ``name`` is a call; anything else stays in the content."""
    calls: list[ToolCall] = []
    kept: list[str] = []
    last = 0
    for match in _CALL.finditer(text):
        try:
            body = json.loads(match.group(1))
        except json.JSONDecodeError:
            continue
        if not isinstance(body, dict) or not isinstance(body.get("name"), str):
            continue
        kept.append(text[last : match.start()])
        last = match.end()
        calls.append(ToolCall(body["name"], _arguments(body.get("arguments", {}))))
    kept.append(text[last:])
    return "".join(kept).strip("\n") if calls else text, calls
