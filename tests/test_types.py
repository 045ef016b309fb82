"""The contracts of reflex/types.py: the core StrategyContext (at most 15 members), each opt-in
capability its own protocol, BaseStrategy's typed options and the frozen settings a strategy
reads."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import ClassVar, cast

import pytest
from pydantic import BaseModel, ConfigDict

from reflex.api import (
    COMPONENTS,
    JUDGING,
    PHASES,
    REASONING,
    SCREENING,
    STRATEGIES,
    BaseStrategy,
    BudgetView,
    Capability,
    Components,
    Judging,
    Phases,
    Reasoning,
    RunSettings,
    Screening,
    Strategies,
    StrategyContext,
)

CORE = {
    "train",
    "val",
    "initial_prompt",
    "settings",
    "budget",
    "rng",
    "state",
    "iteration",
    "best_prompt",
    "best_val",
    "should_stop",
    "evaluate",
    "record_iteration",
    "log",
    "capability",
}


CAPABILITIES = {
    REASONING: Reasoning,
    COMPONENTS: Components,
    SCREENING: Screening,
    PHASES: Phases,
    JUDGING: Judging,
    STRATEGIES: Strategies,
}


def _members(protocol: type) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")}


def test_the_core_has_at_most_fifteen_members() -> None:
    assert _members(StrategyContext) == CORE  # 28 before the capabilities
    assert len(CORE) <= 15


def test_every_capability_is_its_own_protocol() -> None:
    """Apart from the core, and from each other (that RunContext implements each one is checked
    by mypy, in ``reflex.run.context._offered``)."""
    names = [key.name for key in CAPABILITIES]
    assert len(set(names)) == len(names)
    seen: set[str] = set()
    for protocol in CAPABILITIES.values():
        members = _members(protocol)
        assert members and not members & (CORE | seen), protocol
        seen |= members


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Mine(BaseStrategy[_Options]):
    name: ClassVar[str] = "mine"
    Options: ClassVar[type[BaseModel]] = _Options


def test_base_strategy_takes_only_its_own_options_and_gives_the_defaults() -> None:
    mine = _Mine(_Options())
    assert isinstance(mine.options, _Options)
    assert (mine.requires_reasoning_model, mine.derives_from_data, mine.auto_eligible) == (
        False,
        False,
        False,
    )
    with pytest.raises(TypeError, match="strategy 'mine' takes _Options options, not dict"):
        _Mine({})  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError, match="'mine' does not implement optimize"):
        mine.optimize(cast(StrategyContext, None))


def test_the_settings_and_budget_a_strategy_reads_are_frozen() -> None:
    settings = RunSettings(("fake/m",), None, None, {}, max_iterations=5, batch_size=8, seed=0)
    view = BudgetView(None, 1.0, 0, 0, 0.0)
    for frozen, field in ((settings, "max_iterations"), (view, "remaining_calls")):
        with pytest.raises(FrozenInstanceError):
            setattr(frozen, field, 1)
    assert Capability("phases") == PHASES and PHASES.name == "phases"
