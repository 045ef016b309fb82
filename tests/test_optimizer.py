"""The builder validates each setting where it is made, against BaseRunConfig (no model)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import make_rows
from pydantic import ValidationError

from reflex import ConfigurationError, PromptOptimizer
from reflex.config import BaseRunConfig, RunConfig

Call = Callable[[PromptOptimizer], PromptOptimizer]

BAD: dict[str, tuple[Call, tuple[str, ...]]] = {
    "zero workers": (lambda o: o.configure(max_workers=0), ("max_workers=0", "greater than 0")),
    "seed text": (lambda o: o.configure(seed="abc"), ("seed='abc'", "valid integer")),
    "temperature": (lambda o: o.configure(temperature=3.0), ("temperature=3.0", "less than")),
    "prompt mode": (lambda o: o.configure(prompt_mode="x"), ("prompt_mode='x'", "'replace'")),
    "nested budget": (
        lambda o: o.configure(budget={"max_cost": -1}),
        ("budget.max_cost=-1", "greater than 0"),
    ),
    # set_budget takes max_calls; the message names that, not BudgetConfig's field.
    "zero calls": (lambda o: o.set_budget(max_calls=0), ("max_calls=0", "greater than 0")),
    "negative cost": (lambda o: o.set_budget(max_cost=-1.0), ("max_cost=-1.0", "greater than 0")),
    "splits": (lambda o: o.set_splits(0.9, 0.2), ("0.9", "0.2", "sum to less than 1")),
    "reasoning model": (lambda o: o.set_reasoning_model("nomodel"), ("'nomodel'", "provider/")),
    "unknown setting": (lambda o: o.configure(max_iter=3), ("max_iter", "known:")),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_setting_is_one_line_naming_the_value(case: str) -> None:
    call, fragments = BAD[case]
    with pytest.raises(ConfigurationError) as info:
        call(PromptOptimizer())  # before any model: settings are checked on their own
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message


def test_a_rejected_setting_leaves_the_builder_as_it_was(tmp_path: Path) -> None:
    opt = PromptOptimizer().set_dataset(make_rows()).add_provider("fake/task")
    with pytest.raises(ConfigurationError):
        opt.configure(max_workers=2, batch_size=0)
    config = opt.add_metric("exact_match").set_run_dir(tmp_path).build_config()
    assert config.max_workers == 8 and config.batch_size == 8


def test_settings_need_no_model_but_a_run_config_does() -> None:
    assert BaseRunConfig().models == []
    assert BaseRunConfig(max_workers=2).max_workers == 2
    assert set(BaseRunConfig.model_fields) == set(RunConfig.model_fields)
    with pytest.raises(ValidationError):
        RunConfig()
    with pytest.raises(ValidationError):
        RunConfig(models=[])
    # The builder never makes one up: without a task model it says what to call.
    opt = PromptOptimizer().set_dataset(make_rows()).add_metric("exact_match")
    with pytest.raises(ConfigurationError, match=r"no task model: call \.add_provider"):
        opt.configure(max_workers=2).build_config()


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_weights_and_tolerances_are_refused(value: float) -> None:
    # nan passes every `< 0` check: a nan guard could never reject, a nan weight poisons scores
    with pytest.raises(ConfigurationError, match="finite number"):
        PromptOptimizer().add_metric("exact_match", weight=value)
    with pytest.raises(ConfigurationError, match="finite number"):
        PromptOptimizer().add_guard("exact_match", value)
