"""numeric: the number an output states, compared with tolerances."""

from __future__ import annotations

import pytest
from test_metrics import ex

from reflex_metrics.numeric import NumericMatch, extract_number


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is 42.", 42.0),
        ("1,234.5 units", 1234.5),
        ("from 3 to -7", -7.0),
        ("2.5e3", 2500.0),
        ("about 12%", 12.0),
        ("none", None),
        ("\u221212", -12.0),
    ],
)
def test_extract_number(text: str, expected: float | None) -> None:
    assert extract_number(text) == expected


def test_numeric_tolerances() -> None:
    assert NumericMatch().score("so the total is 1,000", ex("1000")).value == 1.0
    assert NumericMatch().score("3.14", ex("3.1416")).value == 0.0
    assert NumericMatch(abs_tol=0.01).score("3.14", ex("3.1416")).value == 1.0
    assert NumericMatch(rel_tol=0.05).score("104", ex("100")).value == 1.0
    assert NumericMatch().score("Answer: 7, then I checked 3", ex("7")).value == 0.0
    assert NumericMatch(last=False).score("Answer: 7, then I checked 3", ex("7")).value == 1.0
    assert (
        NumericMatch().score("no idea", ex("7")).feedback == "output holds no number: got 'no idea'"
    )
    assert NumericMatch().score("5", ex("n/a")).error is not None
