"""JSON value comparison shared by ``tool_call`` and ``json_match``: numbers by value, strings
normalised by a named rule, lists and objects element by element.

String rules (the metrics' ``strings`` option):

- ``exact``: equal as written;
- ``casefold``: case-folded, surrounding whitespace dropped, inner runs of whitespace collapsed;
- ``bfcl``: BFCL's checker (``standardize_string``): lowercased, with spaces and the characters
  ``,./-_*^`` removed and ``'`` read as ``"``.

Numbers compare by value (``5 == 5.0``) within ``abs_tol`` / ``rel_tol``; a boolean is never a
number (``true`` is not ``1``); a number written as a string is a string.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeGuard

from reflex.api import ConfigurationError

__all__ = ["STRING_RULES", "Compare", "is_number", "show"]

STRING_RULES = ("exact", "casefold", "bfcl")
_BFCL_DROP = re.compile(r"[ ,./\-_*^]")


def is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def show(value: object, limit: int = 60) -> str:
    """``value`` as compact JSON on one line, clipped to ``limit`` characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class Compare:
    """How two JSON values are compared; built once from a metric's options."""

    strings: str = "casefold"
    abs_tol: float = 1e-9
    rel_tol: float = 0.0

    def __post_init__(self) -> None:
        if self.strings not in STRING_RULES:
            rules = ", ".join(STRING_RULES)
            raise ConfigurationError(f"strings={self.strings!r} is not a rule; use one of {rules}")
        for label, tol in (("abs_tol", self.abs_tol), ("rel_tol", self.rel_tol)):
            if not is_number(tol) or not math.isfinite(tol) or tol < 0:
                raise ConfigurationError(f"{label} must be a number >= 0, got {tol!r}")

    def text(self, value: str) -> str:
        if self.strings == "exact":
            return value
        if self.strings == "casefold":
            return " ".join(value.split()).casefold()
        return _BFCL_DROP.sub("", value.lower().replace("'", '"'))

    def same(self, got: object, want: object) -> bool:
        """True when ``got`` is ``want`` under these rules (recursively)."""
        if is_number(want):
            return is_number(got) and math.isclose(
                float(got), float(want), rel_tol=self.rel_tol, abs_tol=self.abs_tol
            )
        if isinstance(want, str):
            return isinstance(got, str) and self.text(got) == self.text(want)
        if isinstance(want, (list, tuple)):
            return (
                isinstance(got, (list, tuple))
                and len(got) == len(want)
                and all(self.same(g, w) for g, w in zip(got, want, strict=True))
            )
        if isinstance(want, Mapping):
            return (
                isinstance(got, Mapping)
                and set(got) == set(want)
                and all(self.same(got[k], want[k]) for k in want)
            )
        return type(got) is type(want) and bool(got == want)
