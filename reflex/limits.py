"""A run's limits: :class:`BudgetConfig` (the calls, dollars and seconds a run may spend,
each checked before work starts) and the ``--budget`` presets' names.

A base module: :mod:`reflex.config` holds a ``BudgetConfig`` as ``RunConfig.budget``; the
presets are sized when a run starts (:mod:`reflex.run.presets`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["BudgetConfig", "BudgetPreset"]


#: ``--budget``: a task-call budget sized to the run when it starts (reflex.run.presets).
BudgetPreset = Literal["light", "medium", "heavy"]


class BudgetConfig(BaseModel):
    """Limits checked before work starts; ``None`` means unlimited. The names are the CLI's
    (``--max-calls`` is ``max_calls``) and the builder's (``set_budget(max_calls=...)``); an older
    config.json's ``max_metric_calls`` is read as ``max_calls`` (and written back so)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_calls: int | None = Field(
        default=None,
        gt=0,
        description="Budget: paid task-model calls (every call a pipeline makes; cache hits are "
        "free); judge and reasoning calls are not counted here.",
    )
    max_reasoning_calls: int | None = Field(
        default=None, gt=0, description="Budget: reasoning-model calls."
    )
    max_total_calls: int | None = Field(
        default=None,
        gt=0,
        description="Budget: every paid call of every role (task, judge, reasoning).",
    )
    max_cost: float | None = Field(default=None, gt=0, description="Budget: dollars.")
    max_seconds: float | None = Field(default=None, gt=0, description="Budget: wall-clock seconds.")
    # An explicit max_calls wins over the preset.
    preset: BudgetPreset | None = Field(  # sized by reflex.run.presets
        default=None,
        description="Budget preset: the task-call budget sized to the splits and the strategy "
        "when the run starts (docs/budgets.md).",
    )

    @model_validator(mode="before")
    @classmethod
    def _older_names(cls, data: object) -> object:
        if isinstance(data, Mapping) and "max_metric_calls" in data and "max_calls" not in data:
            data = dict(data)  # an older run's config.json (both names: extra="forbid" says so)
            data["max_calls"] = data.pop("max_metric_calls")
        return data
