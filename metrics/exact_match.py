"""``exact_match``: 1 when the normalised output equals the normalised reference, else 0."""

from __future__ import annotations

import re
import string

from reflex.hookspecs import hookimpl
from reflex.types import Example, Score

__all__ = ["ExactMatch", "normalise", "register_metrics"]

_QUOTES = "\"'`\u201c\u201d\u2018\u2019"


def normalise(text: str, *, case: bool = True, whitespace: bool = True,
              punctuation: bool = False, quotes: bool = True) -> str:
    """Lowercase, collapse whitespace, strip surrounding quotes and a trailing period."""
    value = text.strip()
    if whitespace:
        value = re.sub(r"\s+", " ", value)
    if case:
        value = value.lower()
    if quotes:
        value = value.strip(_QUOTES).strip()
        value = value[:-1].rstrip() if value.endswith(".") and not value.endswith("..") else value
    if punctuation:
        value = value.translate(str.maketrans("", "", string.punctuation)).strip()
    return value


class ExactMatch:
    """Exact match after normalisation (case, whitespace, quotes, trailing period by default)."""

    name = "exact_match"
    requires_reference = True

    def __init__(self, *, case: bool = True, whitespace: bool = True,
                 punctuation: bool = False, quotes: bool = True) -> None:
        self.options = {"case": case, "whitespace": whitespace, "punctuation": punctuation,
                        "quotes": quotes}

    def score(self, output: str, example: Example) -> Score:
        reference = example.ideal or ""
        got, want = normalise(output, **self.options), normalise(reference, **self.options)
        if got == want:
            return Score(1.0)
        shown = got if len(got) <= 80 else got[:77] + "..."
        hint = "output is longer than the reference" if len(got) > 2 * len(want) + 10 else (
            "output differs from the reference")
        return Score(0.0, feedback=f"{hint}: got {shown!r}")


@hookimpl
def register_metrics(register) -> None:  # type: ignore[no-untyped-def]
    register("exact_match", ExactMatch)
