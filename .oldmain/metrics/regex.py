"""``regex``: 1 when the output matches a pattern (the option, or the row's reference)."""

from __future__ import annotations

import re
from functools import lru_cache

from reflex.api import ConfigurationError, Example, MetricRegistrar, Score, hookimpl

from ._text import clip

__all__ = ["RegexMatch", "register_metrics"]


@lru_cache(maxsize=1024)
def _compile(pattern: str, flags: int) -> re.Pattern[str]:
    return re.compile(pattern, flags)


class RegexMatch:
    """Pattern match against the stripped output.

    With ``pattern`` the metric needs no reference (label-free); without it each row's reference
    is the pattern. ``full=True`` requires the whole output to match (``re.fullmatch``).
    """

    name = "regex"

    def __init__(
        self, pattern: str | None = None, *, full: bool = False, ignore_case: bool = False
    ) -> None:
        self.flags = re.IGNORECASE if ignore_case else 0
        if pattern is not None:
            try:
                _compile(pattern, self.flags)
            except re.error as exc:
                raise ConfigurationError(f"regex pattern {pattern!r} is invalid: {exc}") from None
        self.pattern = pattern
        self.full = full
        self.requires_reference = pattern is None

    def score(self, output: str, example: Example) -> Score:
        pattern = self.pattern if self.pattern is not None else example.ideal
        if pattern is None:
            return Score(0.0, error="no reference pattern")
        try:
            compiled = _compile(pattern, self.flags)
        except re.error as exc:
            return Score(0.0, error=f"reference is not a valid regex: {exc}")
        text = output.strip()
        found = compiled.fullmatch(text) if self.full else compiled.search(text)
        if found:
            return Score(1.0)
        how = "as a whole" if self.full else "anywhere"
        shown = f" {pattern!r}" if self.pattern is not None else ""
        return Score(
            0.0,
            feedback=f"output does not match the required pattern{shown} {how}: got {clip(text)!r}",
        )


@hookimpl
def register_metrics(register: MetricRegistrar) -> None:
    register("regex", RegexMatch)
