"""Tool descriptions as prompt text: the ``<tools>`` section, its guard, and the tools it sends.

With ``optimize_tool_descriptions`` the run's tools' descriptions become part of the prompt
text, so every strategy may rewrite them like any other text (and ``gepa`` one at a time, each
description a component). The section comes first, before the system text or the chat
template, one block per function and per top-level parameter::

    <tools>
    <function name="math.hypot">
    Calculate the Euclidean norm.
    </function>
    <parameter function="math.hypot" name="x" type="integer" required="true">
    The x side.
    </parameter>
    </tools>

The opening lines are fixed: names, types, enums and required flags come from the tools and
never change (:func:`tools_problem` refuses a candidate that changes, adds, removes or reorders
one, before any call). Only the text between them is rewritten. Every request that offers a
function the section describes (the run's tools, or a row's own tool of that name) is sent with
the section's descriptions (:func:`described_tools`); the messages never carry the section
(:func:`split_tools_section`). Nested properties keep their descriptions as written.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reflex.errors import ConfigurationError

__all__ = [
    "OPEN",
    "ToolBlock",
    "described_tools",
    "run_tools",
    "split_tools_section",
    "strip_tools_section",
    "tool_component_names",
    "tools_problem",
    "tools_section",
    "tools_template",
]

OPEN, CLOSE = "<tools>", "</tools>"
_STR = r'"(?:[^"\\]|\\.)*"'
_FUNCTION = re.compile(rf"^<function name=({_STR})>$")
_PARAMETER = re.compile(rf"^<parameter function=({_STR}) name=({_STR})(?: [^>]*)?>$")
_KEEP = (
    "keep every <function ...> and <parameter ...> line of the <tools> section exactly as it is "
    "(names, types, enums and required flags are fixed) and rewrite only the descriptions "
    "between them"
)


@dataclass(frozen=True)
class ToolBlock:
    """One block of the section: its fixed opening line, the function and parameter it
    describes (``param`` None for the function itself) and the description text."""

    header: str
    function: str
    param: str | None
    text: str

    @property
    def close(self) -> str:
        return "</function>" if self.param is None else "</parameter>"

    @property
    def label(self) -> str:
        return (
            f"function {self.function!r}"
            if self.param is None
            else f"parameter {self.param!r} of {self.function!r}"
        )


def _function(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    inner = tool.get("function")
    return inner if isinstance(inner, Mapping) else tool


def _blocks(tools: Sequence[Mapping[str, Any]]) -> list[ToolBlock]:
    blocks: list[ToolBlock] = []
    for tool in tools:
        fn = _function(tool)
        name = str(fn.get("name", ""))
        blocks.append(ToolBlock(f"<function name={json.dumps(name)}>", name, None, _text(fn)))
        params = fn.get("parameters")
        props = params.get("properties") if isinstance(params, Mapping) else None
        required = params.get("required", []) if isinstance(params, Mapping) else []
        for pname, schema in (props or {}).items():
            blocks.append(
                ToolBlock(
                    _param_header(name, pname, schema, pname in required),
                    name,
                    pname,
                    _text(schema),
                )
            )
    return blocks


def _text(schema: object) -> str:
    text = schema.get("description") if isinstance(schema, Mapping) else None
    return str(text).strip("\n") if isinstance(text, str) else ""


def _param_header(function: str, name: str, schema: object, required: bool) -> str:
    attrs = [f"function={json.dumps(function)}", f"name={json.dumps(name)}"]
    if isinstance(schema, Mapping):
        for key in ("type", "enum"):
            if key in schema:
                attrs.append(f"{key}={json.dumps(schema[key], ensure_ascii=False)}")
    attrs.append(f'required="{str(required).lower()}"')
    return f"<parameter {' '.join(attrs)}>"


def _render(blocks: Sequence[ToolBlock], texts: Sequence[str]) -> str:
    body = [
        f"{b.header}\n{t}\n{b.close}" if t else f"{b.header}\n{b.close}"
        for b, t in zip(blocks, texts, strict=True)
    ]
    return "\n".join([OPEN, *body, CLOSE])


def tools_section(tools: Sequence[Mapping[str, Any]]) -> str:
    """The ``<tools>`` section describing ``tools`` (their own descriptions)."""
    blocks = _blocks(tools)
    return _render(blocks, [b.text for b in blocks])


def tool_component_names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """One component name per block: ``tool-NAME``, ``param-NAME-PARAM`` (non-identifier
    characters as ``_``, a repeat numbered)."""
    names: list[str] = []
    for block in _blocks(tools):
        raw = (
            f"tool-{block.function}"
            if block.param is None
            else (f"param-{block.function}-{block.param}")
        )
        name = re.sub(r"[^A-Za-z0-9_\-]", "_", raw)
        base, n = name, 1
        while name in names:
            n += 1
            name = f"{base}_{n}"
        names.append(name)
    return names


def tools_template(tools: Sequence[Mapping[str, Any]]) -> tuple[dict[str, str], str]:
    """``(components, template part)``: each description a component, the section with a
    ``{name}`` hole per description (:class:`reflex.data.prompts.PromptSpec`'s template form)."""
    blocks = _blocks(tools)
    names = tool_component_names(tools)
    components = {n: b.text for n, b in zip(names, blocks, strict=True)}
    return components, _render(blocks, ["{" + n + "}" for n in names])


def split_tools_section(prompt: str) -> tuple[list[ToolBlock] | str | None, str]:
    """``(blocks, rest)``: the leading section's blocks (a string: why it is malformed; None:
    the prompt has none) and the prompt after it."""
    lines = prompt.strip("\n").split("\n")
    if not lines or lines[0] != OPEN or CLOSE not in lines:
        return None, prompt
    end = lines.index(CLOSE)
    rest = "\n".join(lines[end + 1 :]).strip("\n")
    blocks: list[ToolBlock] = []
    at = 1
    while at < end:
        line = lines[at]
        if not line.strip():
            at += 1
            continue
        function, param = _FUNCTION.match(line), _PARAMETER.match(line)
        if function is None and param is None:
            return (
                f"line {line[:60]!r} of the <tools> section is no <function> or <parameter> line",
                rest,
            )
        closing = "</function>" if function else "</parameter>"
        try:
            stop = lines.index(closing, at + 1, end)
        except ValueError:
            return f"the block {line[:60]!r} has no {closing} line", rest
        name = json.loads((function or param)[1])  # type: ignore[index]
        pname = json.loads(param[2]) if param else None
        text = "\n".join(lines[at + 1 : stop]).strip("\n")
        blocks.append(ToolBlock(line, str(name), None if pname is None else str(pname), text))
        at = stop + 1
    return blocks, rest


def strip_tools_section(prompt: str) -> str:
    """``prompt`` without its leading ``<tools>`` section (itself when it has none)."""
    return split_tools_section(prompt)[1]


def _diff(before: Sequence[ToolBlock], after: Sequence[ToolBlock]) -> str:
    old = {(b.function, b.param): b for b in before}
    new = {(b.function, b.param): b for b in after}
    gone = [old[k] for k in old if k not in new]
    added = [new[k] for k in new if k not in old]
    if gone and added:
        return f"renames {gone[0].label} to {added[0].label}"
    if gone:
        return f"removes {gone[0].label}"
    if added:
        return f"adds {added[0].label}, which the tools do not have"
    changed = next((new[k] for k in old if old[k].header != new[k].header), None)
    if changed is not None:
        return f"changes the type, enum or required flag of {changed.label}"
    return "reorders the tool descriptions"


def tools_problem(reference: str, candidate: str, *, keep_section: bool = True) -> str | None:
    """Why ``candidate`` breaks the ``<tools>`` section of ``reference``, or None when it keeps
    every fixed line (also when neither has a section). ``keep_section`` False lets a candidate
    leave the whole section out (no tool markup at all): its requests then carry the tools'
    own descriptions, so a strategy that rewrites only the instructions still works."""
    before, _ = split_tools_section(reference)
    after, _ = split_tools_section(candidate)
    if not isinstance(before, list):
        if after is not None:
            return "the candidate adds a <tools> section, which this run's prompt does not have"
        if _markup(candidate) > _markup(reference):  # e.g. a description that renames its tool
            return (
                "the revised text writes <function ...> or <parameter ...> lines: the tools' "
                "names, types, enums and required lists are fixed; write only description text"
            )
        return None
    if after is None and (keep_section or _markup(candidate)):
        return f"the candidate drops the <tools> section (the tool descriptions); {_KEEP}"
    if after is None:
        return None
    if isinstance(after, str):
        return f"the candidate's <tools> section is malformed: {after}; {_KEEP}"
    if [b.header for b in before] != [b.header for b in after]:
        return f"the candidate {_diff(before, after)}; {_KEEP}"
    return None


def _markup(text: str) -> int:
    """How many lines of ``text`` are the section's own markup."""
    fixed = {OPEN, CLOSE, "</function>", "</parameter>"}
    lines = text.split("\n")
    return sum(1 for x in lines if x in fixed or _FUNCTION.match(x) or _PARAMETER.match(x))


def described_tools(
    tools: Sequence[Mapping[str, Any]], prompt: str
) -> list[Mapping[str, Any]] | None:
    """``tools`` with the descriptions of ``prompt``'s section (an empty description is left
    out); None when ``prompt`` has no well-formed section (send ``tools`` as they are)."""
    blocks, _ = split_tools_section(prompt)
    if not isinstance(blocks, list):
        return None
    texts = {(b.function, b.param): b.text for b in blocks}
    out: list[Mapping[str, Any]] = []
    for tool in tools:
        fn = _function(tool)
        name = str(fn.get("name", ""))
        if (name, None) not in texts:
            out.append(tool)
            continue
        new = copy.deepcopy(dict(tool))
        inner = new["function"] if isinstance(new.get("function"), dict) else new
        _describe(inner, texts[(name, None)])
        props = inner.get("parameters", {}).get("properties", {})
        for pname, schema in props.items() if isinstance(props, dict) else ():
            if (name, pname) in texts and isinstance(schema, dict):
                _describe(schema, texts[(name, pname)])
        out.append(new)
    return out


def _describe(target: dict[str, Any], text: str) -> None:
    if text.strip():
        target["description"] = text
    else:
        target.pop("description", None)


def run_tools(
    tools: Sequence[Mapping[str, Any]] | None, rows: Sequence[Sequence[Mapping[str, Any]]]
) -> list[Mapping[str, Any]]:
    """The tools whose descriptions a run optimizes: the run's own (``--tools``) when set, else
    each function the rows offer, once, in order of first use. A function two rows define
    differently (apart from descriptions) is a one-line ConfigurationError."""
    if tools:
        return list(tools)
    seen: dict[str, Mapping[str, Any]] = {}
    for row in rows:
        for tool in row:
            name = str(_function(tool).get("name", ""))
            if name not in seen:
                seen[name] = tool
            elif _shape(seen[name]) != _shape(tool):
                raise ConfigurationError(
                    f"--optimize-tool-descriptions: rows define the function {name!r} in two "
                    "ways; give every row the same schema for it, or set the run's tools with "
                    "--tools"
                )
    return list(seen.values())


def _shape(value: object) -> object:
    """``value`` without its descriptions: what must agree between two definitions."""
    if isinstance(value, Mapping):
        return {k: _shape(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return value
