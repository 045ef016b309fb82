"""``exact_match``: 1 when the normalised output equals the normalised reference, else 0."""

from __future__ import annotations

from reflex.api import Example, MetricRegistrar, Score, hookimpl

from ._text import clip, normalise

__all__ = ["ExactMatch", "normalise", "register_metrics"]


class ExactMatch:
    """Exact match after normalisation.

    Defaults: case-insensitive, whitespace collapsed, surrounding quotes and one trailing period
    stripped; ``punctuation=True`` also drops all punctuation. Feedback says how the output
    differs without quoting the reference unless ``show_reference=True``.
    """

    name = "exact_match"
    requires_reference = True

    def __init__(
        self,
        *,
        case: bool = True,
        whitespace: bool = True,
        punctuation: bool = False,
        quotes: bool = True,
        trailing_period: bool = True,
        show_reference: bool = False,
    ) -> None:
        self.options = {
            "case": case,
            "whitespace": whitespace,
            "punctuation": punctuation,
            "quotes": quotes,
            "trailing_period": trailing_period,
        }
        self.show_reference = show_reference

    def score(self, output: str, example: Example) -> Score:
        if example.ideal is None:
            return Score(0.0, error="no reference answer")
        got, want = normalise(output, **self.options), normalise(example.ideal, **self.options)
        if got == want:
            return Score(1.0)
        return Score(0.0, feedback=_difference(got, want, self.show_reference))


def _difference(got: str, want: str, show_reference: bool) -> str:
    if not got:
        hint = "output is empty"
    elif want and want in got:
        hint = "output contains the expected answer plus extra text; answer with it alone"
    elif len(got) > 2 * len(want) + 10:
        hint = f"output is much longer than expected ({len(got)} vs {len(want)} characters)"
    else:
        hint = "output differs from the expected answer"
    detail = f": got {clip(got)!r}"
    if show_reference:
        detail += f", expected {clip(want)!r}"
    return hint + detail


@hookimpl
def register_metrics(register: MetricRegistrar) -> None:
    register("exact_match", ExactMatch)
