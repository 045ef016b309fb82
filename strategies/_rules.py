"""Rules for tool-call and JSON tasks, read off the train references (``instructions``).

A task is a tool-call task when a train reference holds a call (``<tool_call>`` answer text,
:func:`reflex.api.parse_answer`), a JSON task when every reference is a JSON object or array.
Its candidate rules answer the failure kinds (:func:`reflex.api.failure_kind`):

- a **format rule** (answers in :data:`reflex.api.FORMAT_FAILURES`): answer with a tool call,
  not text (or, when some references call no function, only when one is needed); answer with
  only the JSON value, no prose or code fences, plus the keys every reference object has;
- a **tool-selection rule** (``wrong function``): call only an offered function, named exactly
  as offered, the one the request asks for; with a few distinct functions that repeat, one
  short train input per function.

Wrong argument or field values are not a rule's to fix: ``fewshot``'s demos are (the kinds
raise its priority in ``auto``). Given the counts of kinds on a probe batch, a rule no failing
row needs is left out and the rule for the commoner kind comes first; without counts (or with
no failure of either kind) every rule is a candidate, the combined one first.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal

from reflex.api import FORMAT_FAILURES, WRONG_FUNCTION, Example, parse_answer

from ._common import join_sections, references

__all__ = [
    "JSON_FORMAT",
    "TOOL_FORMAT",
    "TOOL_FORMAT_WHEN_NEEDED",
    "TOOL_SELECTION",
    "rule_candidates",
    "structured_task",
]

TOOL_FORMAT = (
    "Answer with a tool call, not text: call the function with its arguments; do not describe "
    "the call or write it as JSON or code."
)
TOOL_FORMAT_WHEN_NEEDED = (
    "When the request needs a function, answer with a tool call, not text: call the function "
    "with its arguments; do not describe the call or write it as JSON or code. When it needs "
    "none, answer in text without a tool call."
)
TOOL_SELECTION = (
    "Call only a function offered with the request, named exactly as offered: the one whose "
    "description matches what the request asks for."
)
JSON_FORMAT = "Answer with only the JSON value: no other text, no code fences."

Task = Literal["tool_call", "json"]


def structured_task(examples: Sequence[Example]) -> Task | None:
    """``"tool_call"``, ``"json"`` or None for ``examples``' references (see the docstring)."""
    refs = references(examples)
    if not refs:
        return None
    if any(parse_answer(r)[1] for r in refs):
        return "tool_call"
    if all(_json_value(r) is not None for r in refs):
        return "json"
    return None


def _json_value(text: str) -> dict[str, object] | list[object] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def _json_keys(refs: Sequence[str]) -> list[str]:
    """The keys every reference object has (objects in a list count one by one)."""
    objects: list[dict[str, object]] = []
    for ref in refs:
        value = _json_value(ref)
        items = value if isinstance(value, list) else [value]
        objects += [item for item in items if isinstance(item, dict)]
    if not objects:
        return []
    common = set(objects[0])
    for item in objects[1:]:
        common &= set(item)
    return [key for key in objects[0] if key in common]


def _selection(examples: Sequence[Example], max_functions: int, max_chars: int) -> str:
    """The tool-selection rule, with one short input per function when few repeat."""
    inputs: dict[str, list[str]] = {}
    for example in examples:
        calls = parse_answer(example.ideal or "")[1]
        if len(calls) == 1 and example.input.strip():
            inputs.setdefault(calls[0].name, []).append(" ".join(example.input.split()))
    total = sum(len(v) for v in inputs.values())
    if not 2 <= len(inputs) <= max_functions or total < 2 * len(inputs):
        return TOOL_SELECTION
    lines = []
    for name in sorted(inputs):
        text = min(inputs[name], key=len)
        text = text if len(text) <= max_chars else text[: max_chars - 3].rstrip() + "..."
        lines.append(f'- {name}: e.g. "{text}"')
    return TOOL_SELECTION + "\nWhich function each kind of request needs:\n" + "\n".join(lines)


def _rules(
    examples: Sequence[Example], task: Task, max_functions: int, max_chars: int
) -> list[tuple[str, str, str]]:
    """``(kind family, edit, rule text)``: the format rule, then (tool calls) the selection rule."""
    refs = references(examples)
    if task == "json":
        keys = _json_keys(refs)
        text = JSON_FORMAT + (f" Each object has the keys: {', '.join(keys)}." if keys else "")
        return [("format", "state the JSON output format", text)]
    every = all(parse_answer(r)[1] for r in refs)
    fmt = TOOL_FORMAT if every else TOOL_FORMAT_WHEN_NEEDED
    selection = _selection(examples, max_functions, max_chars)
    return [
        ("format", "state the tool-call format", fmt),
        ("function", "state how to choose the function", selection),
    ]


def rule_candidates(
    examples: Sequence[Example],
    base: str,
    counts: Mapping[str, int] | None = None,
    *,
    max_functions: int = 16,
    max_chars: int = 120,
) -> list[tuple[str, str]]:
    """``(edit, prompt)`` candidates for a tool-call or JSON task (none for another task)."""
    task = structured_task(examples)
    if task is None:
        return []
    rules = _rules(examples, task, max_functions, max_chars)
    need: Counter[str] = Counter()
    for kind, n in (counts or {}).items():
        family = (
            "format" if kind in FORMAT_FAILURES else "function" if kind == WRONG_FUNCTION else ""
        )
        need[family] += n
    if need["format"] or need["function"]:
        rules = sorted((r for r in rules if need[r[0]]), key=lambda r: -need[r[0]])
    edits: list[tuple[str, list[str]]] = []
    if len(rules) > 1:
        edits.append((" and ".join(r[1] for r in rules), [r[2] for r in rules]))
    edits += [(edit, [text]) for _, edit, text in rules]
    out: list[tuple[str, str]] = []
    for edit, sections in edits:
        prompt = join_sections(base, *(s for s in sections if s not in base))
        if prompt != base.strip() and prompt not in (p for _, p in out):
            out.append((edit, prompt))
    return out
