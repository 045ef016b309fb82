"""``numeric``: the final number in the output equals the reference number within a tolerance."""

from __future__ import annotations

import math
import re

from reflex.api import Example, MetricRegistrar, Score, hookimpl

from ._text import clip

__all__ = ["NumericMatch", "extract_number", "register_metrics"]

# 1,234.5  -3  .5  2e-3  12%  ; thousands separators only in groups of three.
_NUMBER = re.compile(r"[-+\u2212]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")


def extract_number(text: str, *, last: bool = True) -> float | None:
    """The last (or first) number written in ``text``; None when there is none."""
    found: list[float] = []
    for match in _NUMBER.finditer(text):
        raw = match.group(0)
        cleaned = raw.replace(",", "").replace("\u2212", "-")
        try:
            found.append(float(cleaned))
        except ValueError:
            continue
    if not found:
        return None
    return found[-1] if last else found[0]


class NumericMatch:
    """Compares the final number of the output with the reference's number.

    Passes when ``|got - want| <= abs_tol`` or ``<= rel_tol * |want|``. ``last=False`` takes
    the first number of the output instead (for outputs that explain after answering).
    """

    name = "numeric"
    requires_reference = True

    def __init__(
        self,
        *,
        abs_tol: float = 1e-6,
        rel_tol: float = 0.0,
        last: bool = True,
        show_reference: bool = False,
    ) -> None:
        self.abs_tol = abs_tol
        self.rel_tol = rel_tol
        self.last = last
        self.show_reference = show_reference

    def score(self, output: str, example: Example) -> Score:
        if example.ideal is None:
            return Score(0.0, error="no reference answer")
        want = extract_number(example.ideal)
        if want is None:
            return Score(0.0, error=f"reference {clip(example.ideal, 40)!r} holds no number")
        got = extract_number(output, last=self.last)
        if got is None:
            return Score(0.0, feedback=f"output holds no number: got {clip(output)!r}")
        if math.isclose(got, want, rel_tol=self.rel_tol, abs_tol=self.abs_tol):
            return Score(1.0)
        direction = "too high" if got > want else "too low"
        feedback = f"final number {got:g} is {direction}"
        if self.show_reference:
            feedback += f" (expected {want:g})"
        return Score(0.0, feedback=feedback)


@hookimpl
def register_metrics(register: MetricRegistrar) -> None:
    register("numeric", NumericMatch)
