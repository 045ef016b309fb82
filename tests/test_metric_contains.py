"""contains: the normalised reference inside the output, or any of its alternatives."""

from __future__ import annotations

from test_metrics import ex

from reflex_metrics.contains import Contains


def test_contains_and_alternatives() -> None:
    assert Contains().score("It is in New  York, USA", ex("new york")).value == 1.0
    assert Contains().score("It is in Boston", ex("new york")).value == 0.0
    assert Contains(any_of=True).score("NYC!", ex("New York|NYC")).value == 1.0
