"""length: a label-free limit on words or characters."""

from __future__ import annotations

import pytest
from test_metrics import ex

from reflex.errors import ConfigurationError
from reflex_metrics.length import LengthLimit


def test_length_limit() -> None:
    metric = LengthLimit(max_words=4)
    assert metric.requires_reference is False
    assert metric.score("one two three", ex(None)).value == 1.0
    verdict = metric.score("one two three four five six seven eight", ex(None))
    assert verdict.value == pytest.approx(0.5)
    assert verdict.feedback == "output is too long: 8 words (limit 4)"
    assert LengthLimit(max_chars=5, max_words=10).score("abcdefghij", ex(None)).value == 0.5
    with pytest.raises(ConfigurationError, match="max_words"):
        LengthLimit()
