"""Reading grades out of a judge model's reply, however messy.

Accepted, in order: a JSON object (bare, in a code fence, or inside prose; single quotes and
trailing commas tolerated) of the shapes ``{"criteria": {name: {"grade": g, "reason": r}}}``,
``{"criteria": [{"name": n, "grade": g}]}``, ``{name: g}`` or, for one criterion,
``{"grade": g}`` / ``{"score": g}``; then ``name: g`` / ``name = g/5`` lines; then, for one
criterion, ``Grade: g`` or a reply that is just a number. Grades must be integers inside the
scale (``4.0`` and ``"4/5"`` are read as 4; ``4.5`` is refused). Anything else raises
:class:`JudgeParseError`, which the judge treats as transient and retries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

__all__ = ["JudgeParseError", "parse_grades"]

Grades = dict[str, tuple[int, str]]
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_GRADE_KEYS = ("grade", "score", "rating", "value")
_NUMBER = r"(-?\d+(?:\.\d+)?)(?:\s*/\s*\d+)?"


class JudgeParseError(ValueError):
    """The reply holds no usable grade for every criterion; the message says what is wrong."""


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _candidates(reply: str) -> list[str]:
    found = [m.group(1) for m in _FENCE.finditer(reply)]
    start, end = reply.find("{"), reply.rfind("}")
    if start != -1 and end > start:
        found.append(reply[start : end + 1])
    return [*found, reply.strip()]


def _load_json(reply: str) -> object:
    for text in _candidates(reply):
        for variant in (text, re.sub(r",\s*([}\]])", r"\1", text)):
            for attempt in (variant, variant.replace("'", '"')):
                try:
                    return json.loads(attempt)
                except json.JSONDecodeError:
                    continue
    return None


def _grade(value: object, low: int, high: int, name: str) -> int:
    if isinstance(value, Mapping):
        value = next((value[k] for k in _GRADE_KEYS if k in value), None)
    if isinstance(value, str):
        match = re.fullmatch(r"\s*" + _NUMBER + r"\s*", value)
        value = float(match.group(1)) if match else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise JudgeParseError(f"criterion {name!r} has no numeric grade")
    if float(value) != int(value):
        raise JudgeParseError(f"criterion {name!r} grade {value} is not an integer")
    if not low <= int(value) <= high:
        raise JudgeParseError(f"criterion {name!r} grade {int(value)} is outside {low}..{high}")
    return int(value)


def _reason(value: object) -> str:
    if isinstance(value, Mapping):
        for key in ("reason", "reasoning", "explanation", "rationale", "feedback"):
            if isinstance(value.get(key), str):
                return " ".join(value[key].split())
    return ""


def _table(data: object) -> dict[str, object] | None:
    """Criterion key -> raw grade entry, from the accepted JSON shapes."""
    if not isinstance(data, Mapping):
        return None
    inner = data.get("criteria", data.get("grades", data.get("scores", data)))
    if isinstance(inner, list):
        inner = {str(i.get("name", "")): i for i in inner if isinstance(i, Mapping)}
    if not isinstance(inner, Mapping):
        return None
    return {_key(str(k)): v for k, v in inner.items()}


def _from_json(data: object, names: Sequence[str], low: int, high: int) -> Grades | None:
    table = _table(data)
    if table is None:
        return None
    if len(names) == 1 and _key(names[0]) not in table and isinstance(data, Mapping):
        hit = next((k for k in _GRADE_KEYS if k in data), None)
        if hit is not None:
            table = {_key(names[0]): data}
    missing = [n for n in names if _key(n) not in table]
    if missing:
        raise JudgeParseError(f"no grade for criteria {missing}")
    return {n: (_grade(table[_key(n)], low, high, n), _reason(table[_key(n)])) for n in names}


def _from_text(reply: str, names: Sequence[str], low: int, high: int) -> Grades:
    grades: Grades = {}
    for name in names:
        label = r"[\s_-]*".join(re.escape(part) for part in re.split(r"[\s_-]+", name))
        match = re.search(label + r"\W{0,3}\s*[:=\-]\s*\**\s*" + _NUMBER, reply, re.IGNORECASE)
        if match is None and len(names) == 1:
            match = re.search(
                r"(?:grade|score|rating)(?:\s+(?:of|is))?\W{0,3}\s*[:=]?\s*\**\s*" + _NUMBER,
                reply,
                re.IGNORECASE,
            ) or re.fullmatch(r"\s*\**" + _NUMBER + r"\**\.?\s*", reply)
        if match is None:
            raise JudgeParseError(f"no grade found for criterion {name!r}")
        grades[name] = (_grade(match.group(1), low, high, name), "")
    return grades


def parse_grades(reply: str, names: Sequence[str], low: int, high: int) -> Grades:
    """``{criterion: (grade, reason)}`` for every name, or JudgeParseError."""
    if not reply.strip():
        raise JudgeParseError("the reply is empty")
    data = _load_json(reply)
    json_error: JudgeParseError | None = None
    if data is not None:
        try:
            parsed = _from_json(data, names, low, high)
        except JudgeParseError as exc:
            parsed, json_error = None, exc  # incomplete or odd JSON; the prose may still say it
        if parsed is not None:
            return parsed
    try:
        return _from_text(reply, names, low, high)
    except JudgeParseError:
        if json_error is not None:
            raise json_error from None
        raise
