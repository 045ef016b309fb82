"""Demonstrations sent as chat turns: the prompt-text section that carries them, and its parse.

A prompt may end with one section that lists input/output demonstrations to be sent as
conversation turns rather than as system-prompt text::

    Answer the question.

    Examples (as chat turns):

    Input: What is 80 plus 29?
    Output: 109

    Input: What is 12 plus 5?
    Output: 17

:func:`prompt_messages` (what the task model is sent for every evaluation, exported as
``reflex.prompt_messages`` to deploy a saved prompt the way it was scored) sends the text before the
header as the system message, then one user message and one assistant message per demo, then
the example's own conversation. Small models copy an in-prompt ``Output:`` label into their
answers; as turns they answer like the demos (bench/README.md has the measurement).

The section is recognised only when it is well formed: the header on a line of its own, then
one or more blocks of exactly two lines (``Input: ...`` / ``Output: ...``) separated by blank
lines, to the end of the text. Anything else is plain prompt text, sent in the system message
as written: the rule is deterministic, so a score and a deployment agree. A prompt *file* with
a malformed section is refused when it is read (:func:`check_chat_demos`).

A demo whose output is a tool-call answer (canonical answer text, :mod:`reflex.toolcalls`) is sent
as the application would see it (:func:`tool_turns`): an assistant message with real
``tool_calls`` (ids ``demo_<n>_<i>``: the n-th such message, its i-th call; content null when it
has no text), then one ``tool`` message per call answering its id (content ``"ok"``), as OpenAI
requires; a chat template's fixed assistant messages are sent the same way, so a saved template
(demos as text turns) sends what was scored. Any other output (a JSON answer too) is the
assistant message's content as written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from reflex.data.templates import fill, parse_template, template_text, value_text, variables_of
from reflex.data.tool_text import strip_tools_section
from reflex.result import Example
from reflex.toolcalls import ToolCall, parse_answer, to_openai

__all__ = [
    "CHAT_DEMOS_HEADER",
    "chat_demo_turns",
    "check_chat_demos",
    "demo_turns",
    "prompt_messages",
    "saved_template",
    "template_fields",
    "render_chat_demos",
    "split_chat_demos",
    "tool_turns",
]

DEMO_TOOL_RESULT = "ok"  # the content of the tool message answering a demo's call

CHAT_DEMOS_HEADER = "Examples (as chat turns):"
_INPUT = "Input: "
_OUTPUT = "Output: "


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render_chat_demos(pairs: Sequence[tuple[str, str]]) -> str:
    """The section for ``(input, output)`` pairs, whitespace collapsed to single spaces."""
    blocks = [f"{_INPUT}{_one_line(i)}\n{_OUTPUT}{_one_line(o)}" for i, o in pairs]
    return CHAT_DEMOS_HEADER + "\n\n" + "\n\n".join(blocks)


def _parse_blocks(tail: str) -> list[tuple[str, str]] | str:
    """The demo pairs of a section body, or why it is not one."""
    pairs: list[tuple[str, str]] = []
    for number, block in enumerate(tail.strip().split("\n\n"), start=1):
        lines = block.strip("\n").split("\n")
        if len(lines) != 2 or not lines[0].startswith(_INPUT) or not lines[1].startswith(_OUTPUT):
            return f"demo {number} is not an 'Input:' line then an 'Output:' line"
        source, answer = lines[0][len(_INPUT) :].strip(), lines[1][len(_OUTPUT) :].strip()
        if not source or not answer:
            return f"demo {number} has an empty input or output"
        pairs.append((source, answer))
    return pairs if pairs else "the section lists no demos"


def _locate(prompt: str) -> tuple[str, str] | None:
    """``(text before the header, text after it)`` for the last header line, else None."""
    marker = "\n" + CHAT_DEMOS_HEADER + "\n"
    padded = "\n" + prompt + "\n"
    at = padded.rfind(marker)
    if at < 0:
        return None
    return padded[:at].strip("\n"), padded[at + len(marker) :]


def split_chat_demos(prompt: str) -> tuple[str, list[tuple[str, str]]]:
    """``(system text, demo pairs)``; ``(prompt, [])`` when it has no well-formed section."""
    located = _locate(prompt)
    if located is None:
        return prompt, []
    body, tail = located
    parsed = _parse_blocks(tail)
    if isinstance(parsed, str):
        return prompt, []
    return body.strip(), parsed


def _text_turns(pairs: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    turns: list[dict[str, str]] = []
    for source, answer in pairs:
        turns += [{"role": "user", "content": source}, {"role": "assistant", "content": answer}]
    return turns


def chat_demo_turns(pairs: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """One user and one assistant message per ``(input, output)`` pair, in order; an output
    that calls tools is its ``tool_calls`` turn and their results (:func:`tool_turns`)."""
    return tool_turns(_text_turns(pairs))


def tool_turns(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with each assistant text that holds tool calls sent as real calls: an
    assistant message with ``tool_calls`` (ids ``demo_<n>_<i>``) and a ``tool`` message per
    call; every other message as it is. Deterministic, so the cache key is."""
    out: list[dict[str, Any]] = []
    number = 0
    for message in messages:
        content = message.get("content")
        text, calls = "", list[ToolCall]()
        if message.get("role") == "assistant" and isinstance(content, str):
            text, calls = parse_answer(content)
        if not calls or "tool_calls" in message:
            out.append(dict(message))
            continue
        number += 1
        text = text.strip()  # a demo's one line joins its calls with spaces
        entries = to_openai(calls)
        for index, entry in enumerate(entries):
            entry["id"] = f"demo_{number}_{index}"
        out.append({"role": "assistant", "content": text or None, "tool_calls": entries})
        out += [
            {"role": "tool", "tool_call_id": entry["id"], "content": DEMO_TOOL_RESULT}
            for entry in entries
        ]
    return out


def check_chat_demos(prompt: str) -> str | None:
    """Why ``prompt``'s chat-demo section is malformed, or None (also when it has none)."""
    located = _locate(prompt)
    if located is None:
        return None
    parsed = _parse_blocks(located[1])
    if isinstance(parsed, list):
        return None
    return (
        f"its '{CHAT_DEMOS_HEADER}' section is malformed: {parsed}; write each demo as "
        f"'{_INPUT}...' and '{_OUTPUT}...' lines, demos separated by a blank line, or remove "
        "the header to keep the text in the system prompt"
    )


Row = str | Sequence[Mapping[str, Any]] | Mapping[str, object] | Example


def prompt_messages(
    prompt: str | Sequence[Mapping[str, str]],
    conversation: Row,
    mode: Literal["replace", "prepend"] = "replace",
    *,
    fields: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The messages a task model is sent for ``conversation`` (a user text, chat messages, a
    dataset :class:`~reflex.types.Example`, or, for a chat template, a row's fields).

    The prompt is the system message. If the conversation has its own system message,
    ``replace`` swaps it for the prompt and ``prepend`` puts the prompt before its text. A
    trailing ``Examples (as chat turns):`` section leaves the system message and becomes one
    user and one assistant turn per demo, right after it. A chat template (a list of messages,
    or its string form, :mod:`reflex.data.templates`) is rendered with the row's variables
    instead: its messages are the conversation, demos go after its system messages, each demo
    input rendered through its last user message; ``fields`` maps a variable to the row field
    that fills it when the names differ (the run's ``--var``). Deploy a saved prompt with this
    function (or the same rule) to get the behaviour its score was measured with.
    """
    text = prompt if isinstance(prompt, str) else template_text(prompt)
    system, pairs = split_chat_demos(strip_tools_section(text))  # the tools carry that section
    template = parse_template(system)
    if template is not None:
        if fields and isinstance(conversation, Mapping):
            row = dict(conversation)
            conversation = {**row, **{v: row[f] for v, f in fields.items() if f in row}}
        return _rendered(template, pairs, conversation)
    if isinstance(conversation, Example):
        conversation = conversation.messages
    if isinstance(conversation, str):
        conversation = [{"role": "user", "content": conversation}]
    elif isinstance(conversation, Mapping):
        raise ValueError("a row of fields needs a chat template with {{variables}}")
    messages = [dict(m) for m in conversation]
    if messages and messages[0].get("role") == "system":
        if mode == "prepend":
            messages[0]["content"] = f"{system}\n\n{messages[0].get('content', '')}"
        else:
            messages[0]["content"] = system
        return [messages[0], *chat_demo_turns(pairs), *messages[1:]]
    return [{"role": "system", "content": system}, *chat_demo_turns(pairs), *messages]


def _values(row: Row) -> dict[str, str]:
    if isinstance(row, Example):
        return dict(row.variables)
    if isinstance(row, Mapping):
        return {str(k): value_text(v) for k, v in row.items()}
    return {}


def _rendered(
    template: list[dict[str, str]], pairs: Sequence[tuple[str, str]], row: Row
) -> list[dict[str, Any]]:
    values = _values(row)
    missing = [name for name in variables_of(template) if name not in values]
    if missing:
        raise ValueError(f"the row has no value for the template variable {missing[0]!r}")
    messages: list[dict[str, Any]] = [
        {"role": m["role"], "content": fill(m["content"], values)} for m in template
    ]
    lead = next(
        (i for i, m in enumerate(template) if m["role"] not in ("system", "developer")),
        len(template),
    )
    turns = demo_turns(template, pairs)
    if lead == len(template):  # system messages only: the row's own conversation follows
        own = row.messages if isinstance(row, Example) else []
        fixed = tool_turns([*messages, *turns])
        return [*fixed, *(dict(m) for m in own if m.get("role") != "system")]
    return tool_turns([*messages[:lead], *turns, *messages[lead:]])


def demo_turns(
    template: Sequence[Mapping[str, str]], pairs: Sequence[tuple[str, str]]
) -> list[dict[str, str]]:
    """Demo turns for a template: an input that is a JSON object of the variables is rendered
    through the template's last user message; any other input is sent as written."""
    user = next((m["content"] for m in reversed(template) if m["role"] == "user"), None)
    turns = _text_turns(pairs)
    if user is None:
        return turns
    for turn in turns[::2]:
        try:
            data = json.loads(turn["content"])
        except ValueError:
            continue
        if isinstance(data, dict):
            values = {str(k): value_text(v) for k, v in data.items()}
            try:
                turn["content"] = fill(user, values)
            except KeyError:
                continue
    return turns


def template_fields(prompt: str, mapping: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """Each variable of ``prompt`` (a chat template's string form) -> the row field that fills
    it (``mapping``'s, else its own name); None when ``prompt`` has no variables."""
    template = parse_template(split_chat_demos(strip_tools_section(prompt))[0])
    names = variables_of(template) if template is not None else []
    if not names:
        return None
    return {name: (mapping or {}).get(name, name) for name in names}


def saved_template(prompt: str) -> list[dict[str, str]] | None:
    """The chat template to save for ``prompt`` (its demos as fixed turns), or None when it is
    not one: ``prompt_messages`` of the saved list is what was scored."""
    system, pairs = split_chat_demos(strip_tools_section(prompt))
    template = parse_template(system)
    if template is None:
        return None
    lead = next(
        (i for i, m in enumerate(template) if m["role"] not in ("system", "developer")),
        len(template),
    )
    return [*template[:lead], *demo_turns(template, pairs), *template[lead:]]
