"""f1: SQuAD token F1, hand-checked."""

from __future__ import annotations

import pytest
from test_metrics import ex

from reflex_metrics.f1 import TokenF1, token_f1


def test_token_f1_hand_values() -> None:
    assert token_f1("the cat sat", "a cat sat down") == pytest.approx((1.0, 2 / 3, 0.8))
    assert token_f1("", "") == (1.0, 1.0, 1.0)
    assert token_f1("dog", "cat") == (0.0, 0.0, 0.0)
    verdict = TokenF1().score("The Eiffel tower in Paris", ex("Eiffel Tower"))
    assert verdict.value == pytest.approx(2 / 3)
    assert verdict.objectives == pytest.approx({"precision": 0.5, "recall": 1.0})
