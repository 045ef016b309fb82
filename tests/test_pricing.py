"""Prices before any call (reflex.models.pricing.token_prices): LiteLLM's table or none."""

from __future__ import annotations

from typing import Any

import pytest

from reflex.models.client import load_litellm
from reflex.models.pricing import token_prices


@pytest.fixture(scope="module")
def litellm() -> Any:
    return load_litellm()


def test_litellm_s_table_prices_a_known_model(litellm: Any) -> None:
    entry = litellm.model_cost["gpt-4o-mini"]
    found = token_prices(litellm, "openai/gpt-4o-mini")
    assert found is not None
    assert found == pytest.approx((entry["input_cost_per_token"], entry["output_cost_per_token"]))


def test_the_embedded_model_is_free(litellm: Any) -> None:
    assert token_prices(litellm, "local/default") == (0.0, 0.0)


def test_a_model_the_table_lacks_is_unpriced_not_free(litellm: Any) -> None:
    assert token_prices(litellm, "fake/task") is None
    assert token_prices(litellm, "openai/no-such-model-xyz") is None
