"""``contains``: 1 when the output contains the reference (normalised), else 0."""

from __future__ import annotations

from reflex.api import Example, MetricRegistrar, Score, hookimpl

from ._text import clip, normalise

__all__ = ["Contains", "register_metrics"]


class Contains:
    """The normalised reference occurs in the normalised output.

    ``any_of`` splits the reference on ``separator`` and passes when any alternative occurs
    (e.g. ``"NYC|New York"``). Case and whitespace are normalised; punctuation optionally.
    """

    name = "contains"
    requires_reference = True

    def __init__(
        self,
        *,
        case: bool = True,
        punctuation: bool = False,
        any_of: bool = False,
        separator: str = "|",
        show_reference: bool = False,
    ) -> None:
        self.options = {
            "case": case,
            "whitespace": True,
            "punctuation": punctuation,
            "quotes": True,
            "trailing_period": True,
        }
        self.any_of = any_of
        self.separator = separator
        self.show_reference = show_reference

    def score(self, output: str, example: Example) -> Score:
        if example.ideal is None:
            return Score(0.0, error="no reference answer")
        wanted = example.ideal.split(self.separator) if self.any_of else [example.ideal]
        needles = [normalise(w, **self.options) for w in wanted]
        haystack = normalise(output, **self.options)
        if any(needle and needle in haystack for needle in needles):
            return Score(1.0)
        feedback = f"output does not contain the expected answer: got {clip(haystack)!r}"
        if self.show_reference:
            feedback += f", expected it to contain {clip(example.ideal)!r}"
        return Score(0.0, feedback=feedback)


@hookimpl
def register_metrics(register: MetricRegistrar) -> None:
    register("contains", Contains)
