"""Prices before any call (reflex.models.pricing.token_prices): --price first, then LiteLLM's."""

from __future__ import annotations

import pytest

from reflex.models.pricing import token_prices


def test_a_given_price_per_million_wins() -> None:
    assert token_prices("openai/gpt-4o-mini", {"openai/gpt-4o-mini": (2.0, 8.0)}) == (2e-6, 8e-6)


def test_litellm_s_table_prices_a_known_model() -> None:
    from reflex.models.client import load_litellm

    entry = load_litellm().model_cost["gpt-4o-mini"]
    found = token_prices("openai/gpt-4o-mini", {})
    assert found is not None
    assert found == pytest.approx((entry["input_cost_per_token"], entry["output_cost_per_token"]))


def test_a_model_the_table_lacks_is_unpriced_not_free() -> None:
    assert token_prices("fake/task", {}) is None
    assert token_prices("openai/no-such-model-xyz", {}) is None
