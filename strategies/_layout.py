"""Layout transforms for ``structural`` (and ``pdo``'s seed pool): same content, new layout.

A prompt is parsed into sentences (and list blocks, kept whole), each classified as role, task,
constraint or format by keywords; markup our own transforms add (headers, tags, labels, step
numbers, emphasis, reminders) is stripped first, so a transform applies cleanly to the output
of another. A trailing ``Examples:`` or ``Examples (as chat turns):`` section (fewshot demos)
is kept verbatim at the end.
Transforms are pure and deterministic; each returns the new prompt text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from reflex.api import CHAT_DEMOS_HEADER

__all__ = ["TRANSFORMS", "Parts", "apply_transform", "parse_parts"]

GENERIC_ROLE = "You are a careful, precise assistant."
READ_STEP = "Read the input carefully."
ANCHOR = "Base your answer only on the user's input that follows; answer that input, nothing else."
REMINDER = "Remember:"
_FILLER = re.compile(r"\b(please|kindly|carefully|simply|just)\s+", re.I)
_ROLE = re.compile(r"^(you are|you're|as an? |act as|your role)", re.I)
_FORMAT = re.compile(
    r"\b(answer with|respond with|reply with|output|format|json|one word|only the|"
    r"return only|exactly as written|nothing else|the answer is one of)\b",
    re.I,
)
_CONSTRAINT = re.compile(
    r"\b(must|never|do not|don't|always|avoid|only|should not|without|make sure|ensure)\b", re.I
)
_LABEL = re.compile(r"^(role|task|constraints?|format|output format):\s*", re.I)
_NUMBERED = re.compile(r"^\d+[.)]\s+")
_TAG_LINE = re.compile(r"^\s*</?[a-z_]+>\s*$", re.I)
_TAG = re.compile(r"</?(role|task|constraints|output_format)>", re.I)


@dataclass(frozen=True)
class Parts:
    """A prompt's content by kind, in original order, plus a verbatim demo-section tail."""

    role: tuple[str, ...] = ()
    task: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    format: tuple[str, ...] = ()
    tail: str = ""

    def units(self) -> list[str]:
        return [*self.role, *self.task, *self.constraints, *self.format]


def _clean_lines(text: str) -> list[str]:
    lines: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#") or _TAG_LINE.match(line) or line == "Follow these steps:":
            lines.append("")
            continue
        line = _TAG.sub("", line)
        line = _NUMBERED.sub("", _LABEL.sub("", line))
        line = line.removeprefix("IMPORTANT: ").removeprefix(REMINDER).strip()
        lines.append(line)
    return lines


def _units(lines: list[str]) -> list[str]:
    """Sentences, except that a ``header:`` line with ``- item`` lines stays one unit."""
    units: list[str] = []
    for para in "\n".join(lines).split("\n\n"):
        rows = [r for r in para.split("\n") if r.strip()]
        if len(rows) > 1 and rows[0].endswith(":") and all(r.startswith("- ") for r in rows[1:]):
            units.append("\n".join(rows))
            continue
        for row in rows:
            units.extend(s.strip() for s in re.split(r"(?<=[.!?])\s+", row) if s.strip())
    drop = {GENERIC_ROLE, READ_STEP, ANCHOR}
    return [u for u in dict.fromkeys(units) if u not in drop]


def _kind(unit: str) -> str:
    if "\n" in unit:
        return "task"
    if _ROLE.match(unit):
        return "role"
    if _FORMAT.search(unit):
        return "format"
    return "constraints" if _CONSTRAINT.search(unit) else "task"


def parse_parts(prompt: str) -> Parts:
    """Split ``prompt`` into classified units (see the module docstring)."""
    body, sep, tail = prompt.partition(f"\n{CHAT_DEMOS_HEADER}\n")
    header = CHAT_DEMOS_HEADER
    if not sep:
        body, sep, tail = prompt.partition("\nExamples:\n")
        header = "Examples:"
    groups: dict[str, list[str]] = {"role": [], "task": [], "constraints": [], "format": []}
    for unit in _units(_clean_lines(body)):
        groups[_kind(unit)].append(unit)
    return Parts(
        role=tuple(groups["role"]),
        task=tuple(groups["task"]),
        constraints=tuple(groups["constraints"]),
        format=tuple(groups["format"]),
        tail=f"{header}\n{tail}".rstrip() if sep else "",
    )


def _join(*blocks: str, tail: str = "") -> str:
    return "\n\n".join(b.strip() for b in (*blocks, tail) if b.strip())


def _lines(units: tuple[str, ...] | list[str]) -> str:
    return "\n".join(units)


def sections_reordered(p: Parts) -> str:
    """Role, then format and constraints before the task (what the answer must look like first)."""
    return _join(
        " ".join(p.role), _lines(p.format), _lines(p.constraints), _lines(p.task), tail=p.tail
    )


def markdown_headers(p: Parts) -> str:
    sections = [
        ("Role", p.role),
        ("Task", p.task),
        ("Constraints", p.constraints),
        ("Output format", p.format),
    ]
    return _join(
        *(f"## {title}\n{_lines(units)}" for title, units in sections if units), tail=p.tail
    )


def xml_tags(p: Parts) -> str:
    sections = [
        ("role", p.role),
        ("task", p.task),
        ("constraints", p.constraints),
        ("output_format", p.format),
    ]
    return _join(
        "\n".join(f"<{tag}>\n{_lines(units)}\n</{tag}>" for tag, units in sections if units),
        tail=p.tail,
    )


def flat_minimal(p: Parts) -> str:
    units = [" ".join(_FILLER.sub("", u).split()) for u in p.units()]
    return _join(" ".join(u[:1].upper() + u[1:] for u in units), tail=p.tail)


def role_task_format(p: Parts) -> str:
    role = " ".join(p.role) or GENERIC_ROLE
    blocks = [f"Role: {role}", f"Task: {' '.join(p.task)}" if p.task else ""]
    if p.constraints:
        blocks.append(f"Constraints: {' '.join(p.constraints)}")
    if p.format:
        blocks.append(f"Format: {' '.join(p.format)}")
    return _join("\n".join(b for b in blocks if b), tail=p.tail)


def constraint_emphasis(p: Parts) -> str:
    rules = [*p.constraints, *p.format] or list(p.task[-1:])
    body = [u for u in p.units() if u not in rules]
    emphasised = [f"IMPORTANT: {u}" for u in rules]
    return _join(_lines(body), _lines(emphasised), f"{REMINDER} {' '.join(rules)}", tail=p.tail)


def decomposed_steps(p: Parts) -> str:
    steps = [READ_STEP, *p.task, *p.constraints, *p.format]
    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(steps, start=1))
    return _join(" ".join(p.role), f"Follow these steps:\n{numbered}", tail=p.tail)


def input_anchored(p: Parts) -> str:
    return _join(
        " ".join(p.role),
        _lines(p.task),
        _lines(p.constraints),
        ANCHOR,
        _lines(p.format),
        tail=p.tail,
    )


# Library order is the order untried transforms are tried in.
TRANSFORMS: dict[str, Callable[[Parts], str]] = {
    "sections_reordered": sections_reordered,
    "markdown_headers": markdown_headers,
    "xml_tags": xml_tags,
    "flat_minimal": flat_minimal,
    "role_task_format": role_task_format,
    "constraint_emphasis": constraint_emphasis,
    "decomposed_steps": decomposed_steps,
    "input_anchored": input_anchored,
}


def apply_transform(name: str, prompt: str) -> str:
    """``prompt`` laid out by transform ``name`` (a key of ``TRANSFORMS``)."""
    return TRANSFORMS[name](parse_parts(prompt)).strip()
