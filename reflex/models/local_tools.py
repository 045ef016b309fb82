"""Tools and answer formats for the embedded model (:mod:`reflex.models.local`).

- Tools reach the model through its own chat template. For a GGUF that holds one (Qwen's does),
  llama-cpp-python's default chat handler is a ``Jinja2ChatFormatter`` over that template,
  rendered with ``tools=``: Qwen2.5's template lists the functions in the system turn inside
  ``<tools></tools>`` and asks for ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``
  answers. Earlier tool-call turns are rendered by the template too, their ``arguments`` as JSON
  objects (chat templates expect a mapping; vLLM turns the OpenAI string into one the same way).
- A ``tool_choice`` naming one function: llama-cpp-python constrains the answer with a grammar
  made from that function's parameters and answers with ``tool_calls`` itself. ``required``
  with one function offered is sent as that named choice (llama-cpp-python ignores the string);
  with several it constrains nothing. Qwen2.5-Coder-0.5B never writes the ``<tool_call>`` tags
  itself, not even told to (bench/README.md): on it, a call needs a constrained choice.
- Otherwise the answer's ``<tool_call>`` blocks are parsed as vLLM's Hermes parser does
  (:func:`reflex.toolcalls.parse_answer`): each well-formed block whose JSON has a string
  ``name`` becomes a ``tool_calls`` entry, and everything else stays content (escaped later by
  :func:`reflex.toolcalls.render_answer`, so a malformed block is text, never a call). Only when
  tools were offered and ``tool_choice`` is not ``none``, as a server with a tool parser does.
- ``response_format``: ``json_object`` is llama-cpp-python's JSON grammar, ``json_schema`` its
  JSON-schema grammar (``{"type": "json_object", "schema": ...}``); ``text`` asks nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from reflex.toolcalls import parse_answer, to_openai

__all__ = ["answer_calls", "request_options", "template_messages"]

_NO_PARAMETERS = {"type": "object", "properties": {}}


def _tool(tool: Mapping[str, Any]) -> dict[str, object]:
    """An OpenAI tool for llama-cpp-python (which reads ``parameters`` of a named choice)."""
    function = dict(tool.get("function") or {})
    function.setdefault("parameters", _NO_PARAMETERS)
    return {**dict(tool), "function": function}


def request_options(params: Mapping[str, object]) -> dict[str, object]:
    """``create_chat_completion``'s tools, tool choice and response format from LiteLLM's
    ``optional_params``."""
    options: dict[str, object] = {}
    tools = params.get("tools")
    if tools and isinstance(tools, Iterable):
        offered = [_tool(t) for t in tools if isinstance(t, Mapping)]
        options["tools"] = offered
        choice = params.get("tool_choice")
        function = offered[0]["function"] if len(offered) == 1 else None
        if choice == "required" and isinstance(function, Mapping):
            # llama-cpp-python constrains only a named choice; with one function offered,
            # "required" means exactly that call (otherwise it would be ignored).
            choice = {"type": "function", "function": {"name": function.get("name")}}
        if choice is not None:
            options["tool_choice"] = choice
    fmt = params.get("response_format")
    if isinstance(fmt, Mapping) and fmt.get("type") in ("json_object", "json_schema"):
        spec = fmt.get("json_schema") if fmt.get("type") == "json_schema" else fmt
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
        response_format: dict[str, object] = {"type": "json_object"}
        if isinstance(schema, (Mapping, bool)):
            response_format["schema"] = schema
        options["response_format"] = response_format
    return options


def template_messages(messages: list[dict[str, object]]) -> list[dict[str, object]]:
    """The messages for the chat template: a tool-call turn's ``arguments`` as JSON objects."""
    out: list[dict[str, object]] = []
    for message in messages:
        calls = message.get("tool_calls")
        if not isinstance(calls, list):
            out.append(message)
            continue
        turned = []
        for call in calls:
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping) and isinstance(function.get("arguments"), str):
                try:
                    arguments = json.loads(function["arguments"] or "{}")
                except json.JSONDecodeError:
                    arguments = function["arguments"]
                call = {**call, "function": {**function, "arguments": arguments}}
            turned.append(call)
        out.append({**message, "tool_calls": turned})
    return out


def answer_calls(result: dict[str, object], params: Mapping[str, object]) -> dict[str, object]:
    """``result`` with the ``<tool_call>`` blocks of its answer as ``message.tool_calls``."""
    if not params.get("tools") or params.get("tool_choice") == "none":
        return result
    choices = result.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(choice, dict) or not isinstance(message, dict) or message.get("tool_calls"):
        return result  # a named tool choice: llama-cpp-python made the call itself
    content, calls = parse_answer(str(message.get("content") or ""))
    if calls:
        message["content"] = content or None
        message["tool_calls"] = to_openai(calls)
        choice["finish_reason"] = "tool_calls"
    return result
