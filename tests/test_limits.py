"""A run's limits (reflex/limits.py): BudgetConfig's bounds, its older field name, the presets."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from reflex.config import BudgetConfig as FromConfig
from reflex.limits import BudgetConfig


def test_every_limit_is_optional_and_must_be_positive() -> None:
    assert BudgetConfig() == BudgetConfig(max_calls=None, max_cost=None, preset=None)
    for field in ("max_calls", "max_reasoning_calls", "max_total_calls", "max_cost", "max_seconds"):
        with pytest.raises(ValidationError, match=field):
            BudgetConfig.model_validate({field: 0})


def test_an_older_records_call_limit_reads_as_max_calls_and_both_names_are_refused() -> None:
    assert BudgetConfig.model_validate({"max_metric_calls": 7}).max_calls == 7
    with pytest.raises(ValidationError, match="max_metric_calls"):
        BudgetConfig.model_validate({"max_calls": 1, "max_metric_calls": 2})


def test_presets_are_the_three_names_and_config_re_exports_the_one_class() -> None:
    assert BudgetConfig(preset="medium").preset == "medium"
    with pytest.raises(ValidationError, match="preset"):
        BudgetConfig.model_validate({"preset": "huge"})
    assert FromConfig is BudgetConfig
