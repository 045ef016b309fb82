"""``tool_call``: the answer's function calls against the expected ones, with partial credit.

The answer is read with :func:`reflex.api.parse_answer` (the one answer text of
:mod:`reflex.toolcalls`: content, then a ``<tool_call>{...}</tool_call>`` line per call).

**The reference**, in this order:

1. BFCL's ground-truth form, when the row carries it (``example.metadata["ground_truth"]``, the
   field named by ``ground_truth_field``): a list of calls, each
   ``{function_name: {argument: [acceptable values...]}}``. Every listed argument must be given
   with one of its acceptable values, except that an acceptable value ``""`` means the argument
   may be left out (BFCL's optional arguments). ``examples/tool_calls/convert_bfcl.py`` writes
   BFCL rows in this form, with the first acceptable values as ``ideal`` for other metrics.
2. Otherwise ``example.ideal`` as answer text (OpenAI's fine-tuning format: the final assistant
   message's ``tool_calls``, read by :mod:`reflex.data.records`): each argument's one value is
   its acceptable value, and every argument is required. A reference without calls is a "no
   call" reference: any call then scores 0, a text answer 1.

**Scoring** one expected call: 0 when the function name differs; else the share of checks
passed, one for the name and one per argument (each expected argument given with an
acceptable value or, when optional, left out; each argument given that is not expected counts
as a failed check). Numbers compare by value within ``abs_tol`` / ``rel_tol``, strings under the
``strings`` rule (``exact``, ``casefold``, ``bfcl``: see ``_values.py``). Several calls are
matched best-first (in order with ``ordered=True``); the value is the sum over expected calls
divided by the larger of the expected and the made number of calls. Objectives: ``format``
(a call was made exactly when one was expected), ``function`` (share of expected calls whose
function was called), ``exact`` (1 when every call and argument is acceptable).

**Feedback** names what to change: "called `math.hypot` with x=4, y=5; expected also z in
[0]" / "answered in text, no tool call". With ``show_expected=False`` it names the arguments
but never the reference values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reflex.api import (
    ConfigurationError,
    Example,
    MetricRegistrar,
    Score,
    ToolCall,
    hookimpl,
    parse_answer,
)

from ._values import Compare, show

__all__ = ["Expected", "ToolCallMatch", "expected_calls", "register_metrics"]


@dataclass(frozen=True)
class Expected:
    """One expected call: the function, each argument's acceptable values, the optional ones."""

    name: str
    arguments: Mapping[str, tuple[object, ...]] = field(default_factory=dict)
    optional: frozenset[str] = frozenset()
    # BFCL's form: an acceptable object is itself {key: [acceptable values...]}, recursively.
    nested: bool = False


def expected_calls(example: Example, ground_truth_field: str = "ground_truth") -> list[Expected]:
    """The calls ``example`` expects (empty: a "no call" reference); ValueError for a reference
    this metric cannot read (the row is then scored as errored)."""
    if ground_truth_field in example.metadata:
        return _from_bfcl(example.metadata[ground_truth_field], ground_truth_field)
    if example.ideal is None:
        raise ValueError("no reference answer")
    return [
        Expected(c.name, {k: (v,) for k, v in c.arguments.items()})
        for c in parse_answer(example.ideal)[1]
    ]


def _from_bfcl(value: object, where: str) -> list[Expected]:
    shape = f"metadata.{where} must be a list of {{function: {{argument: [values...]}}}}"
    if not isinstance(value, list):
        raise ValueError(shape)
    calls: list[Expected] = []
    for entry in value:
        if not isinstance(entry, Mapping) or len(entry) != 1:
            raise ValueError(shape)
        ((name, arguments),) = entry.items()
        if not isinstance(arguments, Mapping) or not all(
            isinstance(v, list) for v in arguments.values()
        ):
            raise ValueError(shape)
        optional = frozenset(k for k, v in arguments.items() if "" in v)
        acceptable = {k: tuple(v) for k, v in arguments.items()}
        calls.append(Expected(str(name), acceptable, optional, nested=True))
    return calls


@dataclass
class _Check:
    """One expected call against one call made."""

    value: float
    notes: list[str]


class ToolCallMatch:
    """Scores the answer's tool calls against the expected calls (see the module docs)."""

    name = "tool_call"
    requires_reference = True

    def __init__(
        self,
        *,
        strings: str = "casefold",
        abs_tol: float = 1e-9,
        rel_tol: float = 0.0,
        ordered: bool = False,
        show_expected: bool = True,
        ground_truth_field: str = "ground_truth",
    ) -> None:
        for label, flag in (("ordered", ordered), ("show_expected", show_expected)):
            if not isinstance(flag, bool):
                raise ConfigurationError(f"tool_call option {label} must be true or false")
        if not isinstance(ground_truth_field, str) or not ground_truth_field:
            raise ConfigurationError("tool_call option ground_truth_field must be a field name")
        self.compare = Compare(strings, abs_tol, rel_tol)
        self.ordered = ordered
        self.show_expected = show_expected
        self.ground_truth_field = ground_truth_field

    def to_config(self) -> dict[str, Any]:
        options = {
            "strings": self.compare.strings,
            "abs_tol": self.compare.abs_tol,
            "rel_tol": self.compare.rel_tol,
            "ordered": self.ordered,
            "show_expected": self.show_expected,
            "ground_truth_field": self.ground_truth_field,
        }
        return {"name": self.name, "options": options}

    def score(self, output: str, example: Example) -> Score:
        try:
            expected = expected_calls(example, self.ground_truth_field)
        except ValueError as exc:
            return Score(0.0, error=str(exc))
        content, calls = parse_answer(output)
        if not expected:
            if not calls:
                return Score(1.0, objectives=_objectives(1.0, 1.0, 1.0))
            feedback = f"{_describe(calls)}, but this request needs no tool call: answer in text"
            return Score(0.0, feedback=feedback, objectives=_objectives(0.0, 0.0, 0.0))
        if not calls:
            return Score(0.0, feedback=self._no_call(content, expected), objectives=_objectives())
        checks, extra = self._pair(calls, expected)
        value = sum(c.value for c, _ in checks) / max(len(calls), len(expected))
        named = sum(1 for c, _ in checks if c.value > 0) / len(expected)
        objectives = _objectives(1.0, named, 1.0 if value >= 1.0 else 0.0)
        if value >= 1.0:
            return Score(1.0, objectives=objectives)
        return Score(value, feedback=self._feedback(checks, extra), objectives=objectives)

    def _no_call(self, content: str, expected: Sequence[Expected]) -> str:
        feedback = "answered in text, no tool call"
        names = ", ".join(f"`{e.name}`" for e in expected)
        if any(e.name in content for e in expected):
            return f"{feedback}: the text names {names}; make it a tool call, not text"
        return f"{feedback} (expected a call to {names})" if self.show_expected else feedback

    def _pair(
        self, calls: Sequence[ToolCall], expected: Sequence[Expected]
    ) -> tuple[list[tuple[_Check, ToolCall | None]], list[ToolCall]]:
        """Each expected call with the call made that suits it best; the calls left over."""
        left = list(calls)
        pairs: list[tuple[_Check, ToolCall | None]] = []
        for i, want in enumerate(expected):
            in_order = [calls[i]] if i < len(calls) else []
            pool = in_order if self.ordered else left
            best = max(pool, key=lambda c: self._check(c, want).value, default=None)
            if best is None:
                pairs.append((_Check(0.0, [f"no call to `{want.name}`"]), None))
                continue
            if best in left:
                left.remove(best)
            pairs.append((self._check(best, want), best))
        return pairs, left

    def _check(self, call: ToolCall, want: Expected) -> _Check:
        if call.name != want.name:
            return _Check(0.0, [f"{_describe([call])}; expected a call to `{want.name}`"])
        if "_raw" in call.arguments:
            return _Check(0.0, [f"`{call.name}` arguments are not a JSON object"])
        passed, total, notes = 1, 1, []
        for arg, acceptable in want.arguments.items():
            total += 1
            if arg not in call.arguments:
                if arg in want.optional:
                    passed += 1
                else:
                    notes.append(self._expected_also(arg, acceptable))
            elif any(self._accepts(call.arguments[arg], v, want.nested) for v in acceptable):
                passed += 1
            else:
                notes.append(self._wrong(arg, call.arguments[arg], acceptable))
        for arg in call.arguments:
            if arg not in want.arguments:
                total += 1
                notes.append(f"{arg} is not an expected argument")
        head = _describe([call])
        return _Check(passed / total, [f"{head}; {'; '.join(notes)}"] if notes else [])

    def _accepts(self, got: object, want: object, nested: bool) -> bool:
        """``got`` is ``want``; in BFCL's form an object's values are lists of acceptable values
        (``""`` among them: the key may be left out) and lists compare element by element."""
        if not nested or not isinstance(want, (Mapping, list)):
            return self.compare.same(got, want)
        if isinstance(want, list):
            return (
                isinstance(got, list)
                and len(got) == len(want)
                and all(self._accepts(g, w, True) for g, w in zip(got, want, strict=True))
            )
        if not isinstance(got, Mapping) or any(k not in want for k in got):
            return False
        for key, options in want.items():
            values = options if isinstance(options, list) else [options]
            if key not in got:
                if "" not in values:
                    return False
            elif not any(self._accepts(got[key], v, True) for v in values):
                return False
        return True

    def _expected_also(self, arg: str, acceptable: tuple[object, ...]) -> str:
        if self.show_expected:
            return f"expected also {arg} in {show(list(acceptable))}"
        return f"expected also argument {arg}"

    def _wrong(self, arg: str, got: object, acceptable: tuple[object, ...]) -> str:
        if self.show_expected:
            return (
                f"{arg}={show(got)} is not acceptable (expected {arg} in {show(list(acceptable))})"
            )
        return f"{arg}={show(got)} is not an acceptable value"

    def _feedback(
        self, checks: Sequence[tuple[_Check, ToolCall | None]], extra: Sequence[ToolCall]
    ) -> str:
        notes = [note for check, _ in checks for note in check.notes]
        if extra:
            notes.append(f"also {_describe(extra)}, which no expected call matches")
        return " | ".join(notes)


def _describe(calls: Sequence[ToolCall]) -> str:
    parts = []
    for call in calls:
        arguments = ", ".join(f"{k}={show(v, 30)}" for k, v in call.arguments.items())
        parts.append(f"`{call.name}` with {arguments}" if arguments else f"`{call.name}`")
    return "called " + " and ".join(parts)


def _objectives(fmt: float = 0.0, function: float = 0.0, exact: float = 0.0) -> dict[str, float]:
    return {"format": fmt, "function": function, "exact": exact}


@hookimpl
def register_metrics(register: MetricRegistrar) -> None:
    register("tool_call", ToolCallMatch)
