"""exact_match: the normalisation flags, the shape of a miss, the reference only when asked."""

from __future__ import annotations

import pytest
from test_metrics import SECRET, ex

from reflex_metrics.exact_match import ExactMatch, normalise


@pytest.mark.parametrize(
    ("output", "ideal", "options", "expected"),
    [
        ("Paris", "paris", {}, 1.0),
        ('  "Paris."  ', "Paris", {}, 1.0),
        ("Paris", "paris", {"case": False}, 0.0),
        ("New   York", "new york", {}, 1.0),
        ("New   York", "new york", {"whitespace": False}, 0.0),
        ("Hello, world!", "hello world", {}, 0.0),
        ("Hello, world!", "hello world", {"punctuation": True}, 1.0),
        ("'Paris'", "Paris", {"quotes": False}, 0.0),
        ("Paris.", "Paris", {"trailing_period": False}, 0.0),
        ("Wait...", "wait...", {}, 1.0),
    ],
)
def test_exact_match_options(
    output: str, ideal: str, options: dict[str, bool], expected: float
) -> None:
    assert ExactMatch(**options).score(output, ex(ideal)).value == expected


def test_normalise_keeps_ellipsis_and_strips_quotes_after_period() -> None:
    assert normalise("Go on...") == "go on..."
    assert normalise('"yes".') == "yes"


def test_feedback_can_show_the_reference_when_asked() -> None:
    verdict = ExactMatch(show_reference=True).score("Paris", ex(SECRET))
    assert verdict.feedback is not None and SECRET.lower() in verdict.feedback


def test_exact_feedback_names_the_shape_of_the_miss() -> None:
    feedback = ExactMatch().score("The answer is positive.", ex("positive")).feedback
    assert feedback is not None and "extra text" in feedback
