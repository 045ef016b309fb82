"""The tool-call parts of a record: OpenAI tool turns, a row's ``tools``, the expected call.

A row in OpenAI's fine-tuning format for function calling holds ``messages`` whose final
assistant message carries ``tool_calls`` (the reference), plus ``tools`` (the function schemas
offered). Earlier assistant tool calls and ``tool`` results are conversation turns and are kept
exactly as written (never refused, never cut): :func:`tool_message` checks their shape and copies
them. The reference is one answer string, :func:`reference` (``render_answer(content, calls)``
from :mod:`reflex.toolcalls`); a final assistant message without ``tool_calls`` is a "no call"
reference. :func:`check_offered` refuses a reference call naming a function that is not offered
(the row's ``tools``, else the run's when known at load time), naming the file and line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reflex.data.json_types import JSONDict
from reflex.data.readers import Where
from reflex.data.tool_schemas import check_tools
from reflex.errors import ConfigurationError
from reflex.toolcalls import TOOL_CALL_OPEN, from_openai, parse_answer, render_answer

__all__ = [
    "check_offered",
    "is_tool_message",
    "not_offered",
    "reference",
    "row_tools",
    "tool_message",
    "tool_name",
]


def is_tool_message(item: object) -> bool:
    """True for a message that is part of a tool-call conversation (an empty ``tool_calls``
    list, as API exports write on plain answers, is none)."""
    if not isinstance(item, Mapping):
        return False
    if item.get("role") in ("tool", "function"):
        return True
    return item.get("tool_calls") not in (None, []) or item.get("function_call") is not None


def tool_message(item: Mapping[str, object], field: str, where: Where) -> dict[str, object]:
    """An assistant message with ``tool_calls`` or a ``tool`` result, checked and copied whole."""
    role = item.get("role")
    if role == "function" or item.get("function_call") is not None:
        raise where.error(
            f"{field} uses the legacy 'function_call' form; write it as an assistant message "
            "with 'tool_calls' and the result as a 'tool' message with 'tool_call_id'"
        )
    if role == "tool":
        for key in ("tool_call_id", "content"):
            if not isinstance(item.get(key), str):
                raise where.error(f"{field} (a tool result) needs a string {key!r}")
        return dict(item)
    if role != "assistant":
        raise where.error(f"{field} has 'tool_calls' but role {role!r}; only assistant calls")
    content = item.get("content")
    if content is not None and not isinstance(content, str):
        raise where.error(f"{field}.content must be a string or null next to 'tool_calls'")
    calls = item.get("tool_calls")
    if not isinstance(calls, list) or not calls:
        raise where.error(f"{field}.tool_calls must be a non-empty list of calls")
    for i, call in enumerate(calls):
        _check_call(call, f"{field}.tool_calls[{i}]", where)
    return dict(item)


def _check_call(call: object, field: str, where: Where) -> None:
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise where.error(
            f"{field} must be {{'type': 'function', 'function': {{'name': ..., "
            "'arguments': ...}}}}"
        )
    arguments = function.get("arguments")
    parsed = from_openai([{"function": {"name": function["name"], "arguments": arguments}}])
    if arguments is not None and "_raw" in parsed[0].arguments:
        raise where.error(
            f"{field}.function.arguments must be a JSON object (or its JSON text), got "
            f"{str(arguments)[:60]!r}"
        )


def reference(message: Mapping[str, Any]) -> str:
    """The reference answer a final assistant message stands for (its calls, if any)."""
    content = message.get("content")
    calls = from_openai(message.get("tool_calls"))
    return render_answer(content if isinstance(content, str) else None, calls)


def row_tools(record: Mapping[str, object], where: Where) -> tuple[JSONDict, ...]:
    """The row's ``tools`` (OpenAI function schemas), checked; () when the row has none."""
    value = record.get("tools")
    if value is None:
        return ()
    try:
        return tuple(check_tools(value, f"{where.path}:{where.line}"))
    except ConfigurationError as exc:
        raise where.error(_without_source(str(exc), where)) from None


def _without_source(message: str, where: Where) -> str:
    prefix = f"{where.path}:{where.line}: "
    return message[len(prefix) :] if message.startswith(prefix) else message


def check_offered(
    ideal: str | None,
    tools: Sequence[Mapping[str, object]],
    where: Where,
) -> None:
    """Refuse a reference call naming a function that ``tools`` do not offer (no-op without
    tools: what a run offers is then unknown here)."""
    name = not_offered(ideal, tools)
    if name is not None:
        offered = ", ".join(repr(tool_name(tool)) for tool in tools)
        raise where.error(
            f"the reference calls {name!r}, which is not among the tools offered "
            f"({offered}); fix the call's name or add the tool"
        )


def not_offered(ideal: str | None, tools: Sequence[Mapping[str, object]]) -> str | None:
    """The first function the reference ``ideal`` calls that ``tools`` do not offer; None when
    every call is offered (or there are no tools to check against)."""
    if not ideal or not tools or TOOL_CALL_OPEN not in ideal:
        return None
    offered = {tool_name(tool) for tool in tools}
    return next((c.name for c in parse_answer(ideal)[1] if c.name not in offered), None)


def tool_name(tool: Mapping[str, object]) -> str:
    """The function name a tool schema offers (bare, or under ``function``)."""
    function = tool.get("function", tool)
    return str(function.get("name", "")) if isinstance(function, Mapping) else ""
