"""Chat templates with ``{{variable}}`` placeholders: their one string form, rendering and guards.

A chat template is a list of messages (MLflow's chat-prompt form, ``[{"role": "system",
"content": "..."}, {"role": "user", "content": "Classify: {{word}}"}]``). Placeholders are
mustache-style, ``{{name}}`` or ``{{ name }}``; single braces are literal text.

The engine handles every prompt as one string (cache keys, records, trackers, strategies), so a
template has one deterministic string form, each message a block::

    <message role="system">
    You classify words.
    </message>
    <message role="user">
    Classify: {{word}}
    </message>

A prompt that starts with a ``<message role="...">`` line and is made of such blocks is a
template; anything else is plain text. Text after the last block (a strategy's added rules)
belongs to the end of the first system message. :func:`reflex.data.demos.prompt_messages`
renders the form per row. :func:`template_problem` is the guard every candidate passes: the
same messages in the same order, each keeping exactly its placeholders (and the frozen ones
their text), or the reason it is refused.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from reflex.errors import ConfigurationError

__all__ = [
    "ROLES",
    "check_editable",
    "component_names",
    "fill",
    "is_template",
    "messages_from_data",
    "parse_template",
    "placeholders",
    "row_fields",
    "template_problem",
    "template_text",
    "value_text",
    "variables_of",
    "variables_text",
]

ROLES = ("system", "developer", "user", "assistant")
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.\-]*)\s*\}\}")
_OPEN = re.compile(r'^<message role="(system|developer|user|assistant)">$')
_CLOSE = "</message>"


def placeholders(text: str) -> list[str]:
    """Every placeholder name in ``text``, in order, repeats included."""
    return [match[1] for match in PLACEHOLDER.finditer(text)]


def fill(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each placeholder replaced by its value (one pass: values stay verbatim)."""

    def value(match: re.Match[str]) -> str:
        name = match[1]
        if name not in values:
            raise KeyError(name)
        return values[name]

    return PLACEHOLDER.sub(value, text)


def value_text(value: object) -> str:
    """A row value as the text a placeholder is filled with: strings as they are, anything
    else (numbers, booleans, lists, objects) as compact JSON with sorted keys."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def component_names(roles: Sequence[str]) -> list[str]:
    """Component names of the messages: the role, or ``role_N`` when the role repeats."""
    counts = Counter(roles)
    seen: Counter[str] = Counter()
    names: list[str] = []
    for role in roles:
        seen[role] += 1
        names.append(role if counts[role] == 1 else f"{role}_{seen[role]}")
    return names


def template_text(messages: Sequence[Mapping[str, str]]) -> str:
    """The string form of a chat template (see the module docstring)."""
    blocks = [
        f'<message role="{m["role"]}">\n{m["content"].strip(chr(10))}\n{_CLOSE}' for m in messages
    ]
    return "\n".join(blocks)


def is_template(text: str) -> bool:
    """True when ``text`` is in the chat-template string form."""
    return parse_template(text) is not None


def parse_template(text: str) -> list[dict[str, str]] | None:
    """The messages of a template's string form; None when ``text`` is not one."""
    lines = text.strip("\n").split("\n")
    if not lines or not _OPEN.match(lines[0]):
        return None
    messages: list[dict[str, str]] = []
    at = 0
    while at < len(lines) and (opened := _OPEN.match(lines[at])):
        try:
            end = lines.index(_CLOSE, at + 1)
        except ValueError:
            return None
        messages.append({"role": opened[1], "content": "\n".join(lines[at + 1 : end])})
        at = end + 1
    trailing = "\n".join(lines[at:]).strip()
    if trailing:
        system = next((m for m in messages if m["role"] == "system"), None)
        if system is None:
            return None
        system["content"] = f"{system['content']}\n\n{trailing}".strip("\n")
    return messages


def variables_of(messages: Sequence[Mapping[str, str]]) -> list[str]:
    """The template's variable names, each once, in order of first use."""
    return list(dict.fromkeys(name for m in messages for name in placeholders(m["content"])))


def variables_text(values: Mapping[str, str]) -> str:
    """A row's variables as one JSON line: the 'input' metrics, demos and reasoning prompts see."""
    return json.dumps(dict(values), ensure_ascii=False)


def messages_from_data(data: object, where: str) -> list[dict[str, str]]:
    """A chat template from MLflow's list form; a one-line ConfigurationError names the fault."""
    if not isinstance(data, list) or not data:
        raise ConfigurationError(
            f"{where}: a chat template is a non-empty list of {{'role', 'content'}} messages"
        )
    messages: list[dict[str, str]] = []
    for i, item in enumerate(data):
        if not isinstance(item, Mapping) or set(item) - {"role", "content"}:
            raise ConfigurationError(
                f"{where}: chat template message {i} must be an object with only 'role' and "
                "'content'"
            )
        role, content = item.get("role"), item.get("content")
        if role not in ROLES:
            raise ConfigurationError(
                f"{where}: message {i} has role {role!r}; allowed: {', '.join(ROLES)}"
            )
        if not isinstance(content, str) or not content.strip():
            raise ConfigurationError(f"{where}: message {i} ({role}) needs non-empty text content")
        lines = content.split("\n")
        if _CLOSE in lines or any(_OPEN.match(line) for line in lines):
            raise ConfigurationError(
                f"{where}: message {i} holds a line '{_CLOSE}' or '<message role=...>', which "
                "the template's string form reserves; reword that line"
            )
        messages.append({"role": str(role), "content": content.strip("\n")})
    if all(m["role"] == "system" for m in messages) and variables_of(messages):
        raise ConfigurationError(
            f"{where}: the template has variables but no user message; add the user message "
            "that carries them (rows then need no 'input' field)"
        )
    return messages


def row_fields(
    variables: Sequence[str], names: Sequence[str], mapping: Mapping[str, str]
) -> dict[str, str]:
    """Each variable -> the row field that fills it (``mapping``'s, else its own name); a
    mapping for a variable the template lacks is a one-line ConfigurationError."""
    unknown = sorted(set(mapping) - set(variables))
    if unknown:
        raise ConfigurationError(
            f"--var {unknown[0]}=...: the template has no variable {unknown[0]!r} "
            f"(its variables: {', '.join(variables)})"
        )
    return {name: mapping.get(name, name) for name in variables}


def check_editable(names: Sequence[str], editable: Collection[str] | None) -> None:
    """Refuse a ``rewrite_messages`` entry that names no message of the template."""
    bad = sorted(set(editable or ()) - set(names))
    if bad:
        raise ConfigurationError(
            f"--rewrite-messages {bad[0]}: not a message of the template "
            f"(its messages: {', '.join(names)})"
        )


def _counts(text: str) -> Counter[str]:
    return Counter(placeholders(text))


def _message_problem(name: str, before: str, after: str) -> str | None:
    old, new = _counts(before), _counts(after)
    if old == new:
        return None
    dropped = sorted(set(old) - set(new))
    invented = sorted(set(new) - set(old))
    if dropped and invented:
        return f"renames {{{{{dropped[0]}}}}} to {{{{{invented[0]}}}}} in the {name} message"
    if dropped:
        return f"drops {{{{{dropped[0]}}}}} from the {name} message"
    if invented:
        return f"invents {{{{{invented[0]}}}}} in the {name} message (not a template variable)"
    changed = next(n for n in old if old[n] != new[n])
    return (
        f"uses {{{{{changed}}}}} {new[changed]} time(s) in the {name} message "
        f"instead of {old[changed]}"
    )


def template_problem(
    reference: str, candidate: str, editable: Collection[str] | None = None
) -> str | None:
    """Why ``candidate`` breaks the template ``reference`` (string forms, demo sections split
    off by the caller), or None when it keeps it. ``editable``: the message (component) names a
    strategy may rewrite; None means all. A reference that is no template passes anything."""
    before = parse_template(reference)
    if before is None:
        return None
    after = parse_template(candidate)
    fixed = ", ".join(f"{{{{{v}}}}}" for v in variables_of(before))
    keep = f"keep every <message role=...> block and the placeholders {fixed} exactly"
    if after is None:
        return f"the candidate is no longer a chat template: {keep}"
    roles, new_roles = [m["role"] for m in before], [m["role"] for m in after]
    if roles != new_roles:
        return f"the candidate changes the messages ({', '.join(roles)} -> {', '.join(new_roles)})"
    names = component_names(roles)
    for name, old, new in zip(names, before, after, strict=True):
        problem = _message_problem(name, old["content"], new["content"])
        if problem is not None:
            return f"the candidate {problem}; {keep}"
        if editable is not None and name not in editable and old["content"] != new["content"]:
            return f"the candidate rewrites the {name} message, which this run keeps fixed"
    return None
