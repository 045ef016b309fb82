"""``json_match``: a JSON answer against the JSON reference, field by field, with partial credit.

1. **Parse.** The answer must be JSON. A Markdown code fence (```json ... ```) is accepted only
   with ``fenced=True``; otherwise a fenced answer scores 0 and the feedback says to drop the
   fence.
2. **Schema.** With ``schema`` (a JSON Schema, an OpenAI ``response_format`` of type
   ``json_schema`` or ``json_object``, or the path of a JSON file holding one) the answer is
   validated; an invalid answer has its value multiplied by ``1 - schema_penalty`` (default 0.5;
   1 makes an invalid answer 0) and the feedback names the first violations.
3. **Fields.** Every leaf of the reference is one check: an object's keys (a missing key fails
   its leaves; with ``extra_keys="penalise"``, the default, each unexpected key is one failed
   check), lists as multisets (``lists="multiset"``: each reference element matched to the best
   unused answer element; an unmatched or extra element fails its leaves) or in order
   (``lists="ordered"``), numbers by value within ``abs_tol`` / ``rel_tol``, strings under the
   ``strings`` rule (``exact``, ``casefold``, ``bfcl``: see ``_values.py``). The value is the
   share of checks passed (1 when both are empty).

Objectives: ``parse`` (the answer is JSON), ``schema`` (valid against the schema, when one is
given), ``fields`` (the share of checks passed), ``exact`` (all of them). Feedback is per field,
``$[1].unit: got "meter", expected "metre"``; ``show_expected=False`` leaves the reference
values out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from reflex.api import ConfigurationError, Example, MetricRegistrar, Score, hookimpl

from ._values import Compare, show

__all__ = ["JsonMatch", "register_metrics", "schema_of"]

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)\n?```", re.DOTALL)
_MAX_NOTES = 5


def schema_of(value: object) -> dict[str, object]:
    """The JSON Schema that ``value`` names: a schema, a ``response_format``, or a file path."""
    if isinstance(value, (str, Path)):
        path = Path(value)
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigurationError(
                f"json_match schema {str(path)!r} is not a readable JSON file ({exc}); pass a "
                "JSON Schema or a response_format file"
            ) from None
    if not isinstance(value, Mapping):
        raise ConfigurationError("json_match schema must be a JSON object (a JSON Schema)")
    if value.get("type") == "json_object":
        return {"type": ["object", "array"]}
    if value.get("type") == "json_schema":
        inner = value.get("json_schema")
        schema = inner.get("schema") if isinstance(inner, Mapping) else None
        if not isinstance(schema, Mapping):
            raise ConfigurationError(
                "json_match schema: a response_format of type json_schema needs "
                "json_schema.schema (an object)"
            )
        value = schema
    from jsonschema import SchemaError, validators

    try:
        validators.validator_for(value).check_schema(value)
    except SchemaError as exc:
        raise ConfigurationError(
            f"json_match schema is not valid JSON Schema: {exc.message}"
        ) from None
    return dict(value)


class JsonMatch:
    """Scores a JSON answer against the JSON reference (see the module docs)."""

    name = "json_match"
    requires_reference = True

    def __init__(
        self,
        *,
        fenced: bool = False,
        schema: object = None,
        strings: str = "exact",
        abs_tol: float = 1e-9,
        rel_tol: float = 0.0,
        lists: str = "multiset",
        extra_keys: str = "penalise",
        schema_penalty: float = 0.5,
        show_expected: bool = True,
    ) -> None:
        for label, flag in (("fenced", fenced), ("show_expected", show_expected)):
            if not isinstance(flag, bool):
                raise ConfigurationError(f"json_match option {label} must be true or false")
        _choice("lists", lists, ("multiset", "ordered"))
        _choice("extra_keys", extra_keys, ("penalise", "ignore"))
        if not isinstance(schema_penalty, (int, float)) or not 0 <= schema_penalty <= 1:
            raise ConfigurationError(
                f"json_match option schema_penalty must be in [0, 1], got {schema_penalty!r}"
            )
        self.compare = Compare(strings, abs_tol, rel_tol)
        self.fenced, self.show_expected = fenced, show_expected
        self.lists, self.extra_keys = lists, extra_keys
        self.schema_penalty = float(schema_penalty)
        self.schema = schema_of(schema) if schema is not None else None

    def to_config(self) -> dict[str, Any]:
        options = {
            "fenced": self.fenced,
            "schema": self.schema,  # by content: check/export rebuild it without the file
            "strings": self.compare.strings,
            "abs_tol": self.compare.abs_tol,
            "rel_tol": self.compare.rel_tol,
            "lists": self.lists,
            "extra_keys": self.extra_keys,
            "schema_penalty": self.schema_penalty,
            "show_expected": self.show_expected,
        }
        return {"name": self.name, "options": options}

    def score(self, output: str, example: Example) -> Score:
        if example.ideal is None:
            return Score(0.0, error="no reference answer")
        try:
            want = json.loads(example.ideal)
        except json.JSONDecodeError:
            return Score(0.0, error="the reference is not JSON")
        got, problem = self._parse(output)
        if problem is not None:
            objectives = {"parse": 0.0, "fields": 0.0, "exact": 0.0}
            return Score(0.0, feedback=problem, objectives=objectives | self._schema_zero())
        passed, total, notes = self._match(got, want, "$")
        fields = _share(passed, total)
        violations = self._violations(got)
        value = fields * (1.0 - self.schema_penalty) if violations else fields
        objectives = {"parse": 1.0, "fields": fields, "exact": float(fields >= 1.0)}
        if self.schema is not None:
            objectives["schema"] = 0.0 if violations else 1.0
        lines = violations + notes
        feedback = None
        if lines:
            more = len(lines) - _MAX_NOTES
            feedback = "; ".join(lines[:_MAX_NOTES]) + (f"; and {more} more" if more > 0 else "")
        return Score(value, feedback=feedback, objectives=objectives)

    def _schema_zero(self) -> dict[str, float]:
        return {"schema": 0.0} if self.schema is not None else {}

    def _parse(self, output: str) -> tuple[object, str | None]:
        text = output.strip()
        fence = _FENCE.search(text)
        if fence is not None and self.fenced:
            text = fence.group(1).strip()
        try:
            return json.loads(text), None
        except json.JSONDecodeError as exc:
            if fence is not None:
                return None, "the JSON is inside a ``` code fence; answer with the bare JSON only"
            return None, f"the answer is not JSON ({exc.msg} at character {exc.pos})"

    def _violations(self, got: object) -> list[str]:
        if self.schema is None:
            return []
        from jsonschema import validators

        validator = validators.validator_for(self.schema)(self.schema)
        errors = sorted(validator.iter_errors(got), key=lambda e: list(map(str, e.path)))
        return [f"schema: {_path(e.path)}: {e.message}" for e in errors[:3]]

    def _match(self, got: object, want: object, path: str) -> tuple[int, int, list[str]]:
        """(checks passed, checks, notes) of ``got`` against ``want`` at ``path``."""
        if isinstance(want, Mapping):
            return self._match_object(got, want, path)
        if isinstance(want, list):
            return self._match_list(got, want, path)
        if self.compare.same(got, want):
            return 1, 1, []
        if self.show_expected:
            return 0, 1, [f"{path}: got {show(got)}, expected {show(want)}"]
        return 0, 1, [f"{path}: got {show(got)}, which is not the expected value"]

    def _match_object(
        self, got: object, want: Mapping[str, object], path: str
    ) -> tuple[int, int, list[str]]:
        if not isinstance(got, Mapping):
            return 0, max(1, _leaves(want)), [f"{path}: expected an object, got {show(got)}"]
        passed, total, notes = 0, 0, []
        for key, value in want.items():
            if key not in got:
                total += max(1, _leaves(value))
                notes.append(f"{path}.{key}: missing")
                continue
            p, t, n = self._match(got[key], value, f"{path}.{key}")
            passed, total, notes = passed + p, total + t, notes + n
        if self.extra_keys == "penalise":
            extra = [k for k in got if k not in want]
            total += len(extra)
            notes.extend(f"{path}.{k}: unexpected key" for k in extra)
        return passed, total, notes

    def _match_list(self, got: object, want: list[object], path: str) -> tuple[int, int, list[str]]:
        if not isinstance(got, list):
            return 0, max(1, _leaves(want)), [f"{path}: expected a list, got {show(got)}"]
        passed, total, notes = 0, 0, []
        left = list(range(len(got)))
        for i, value in enumerate(want):
            pool = ([i] if i < len(got) else []) if self.lists == "ordered" else left
            tries = [(self._match(got[j], value, f"{path}[{j}]"), j) for j in pool]
            best = max(tries, key=lambda t: (_share(t[0][0], t[0][1]), -t[1]), default=None)
            if best is None:
                total += max(1, _leaves(value))
                notes.append(
                    f"{path}: missing an element like {show(value)}"
                    if self.show_expected
                    else f"{path}: an expected element is missing"
                )
                continue
            (p, t, n), j = best
            left.remove(j)
            passed, total, notes = passed + p, total + t, notes + n
        for j in left:
            total += max(1, _leaves(got[j]))
            notes.append(f"{path}[{j}]: unexpected element {show(got[j])}")
        return passed, total, notes


def _share(passed: int, total: int) -> float:
    return passed / total if total else 1.0  # nothing to check ([] against []): a full match


def _leaves(value: object) -> int:
    if isinstance(value, Mapping):
        return sum(_leaves(v) for v in value.values())
    if isinstance(value, list):
        return sum(_leaves(v) for v in value)
    return 1


def _path(parts: Iterable[object]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def _choice(label: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigurationError(
            f"json_match option {label}={value!r}; use one of {', '.join(allowed)}"
        )


@hookimpl
def register_metrics(register: MetricRegistrar) -> None:
    register("json_match", JsonMatch)
