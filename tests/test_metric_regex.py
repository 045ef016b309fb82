"""regex: a fixed, label-free pattern, or each row's reference as the pattern."""

from __future__ import annotations

import pytest
from test_metrics import ex

from reflex.errors import ConfigurationError
from reflex_metrics.regex import RegexMatch


def test_regex_from_option_is_label_free_and_from_reference_otherwise() -> None:
    fixed = RegexMatch(r"\d{4}-\d{2}-\d{2}", full=True)
    assert fixed.requires_reference is False
    assert fixed.score("2024-01-31", ex(None)).value == 1.0
    assert fixed.score("on 2024-01-31", ex(None)).value == 0.0
    per_row = RegexMatch()
    assert per_row.requires_reference is True
    assert per_row.score("answer: B", ex(r"\bB\b")).value == 1.0
    assert per_row.score("x", ex("(")).error is not None
    with pytest.raises(ConfigurationError, match="invalid"):
        RegexMatch("(")
