"""The up-front budget plan of ``gepa``: how many proposals a metric-call budget buys.

The plan is in model calls: a pipeline that calls a model k times per example costs k calls per
row (``StrategyContext.calls_per_row``, its average so far), a plain run one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reflex.api import StrategyContext


__all__ = ["BudgetPlan", "plan_budget"]


@dataclass(frozen=True)
class BudgetPlan:
    """What a metric-call budget buys: proposals if every one is accepted / rejected.

    ``pool``, ``minibatch`` and ``seed_cost`` are in rows (x task models); ``calls_per_row``
    turns them into model calls.
    """

    available: int | None
    pool: int
    minibatch: int
    seed_cost: int
    max_iterations: int
    calls_per_row: float = 1.0

    def calls(self, rows: int) -> int:
        """Model calls ``rows`` evaluations are expected to make."""
        return math.ceil(rows * self.calls_per_row)

    @property
    def per_rejected(self) -> int:
        return self.calls(2 * self.minibatch)

    @property
    def per_accepted(self) -> int:
        return self.calls(2 * self.minibatch + self.pool)

    def proposals(self, *, accepted: bool) -> int:
        if self.available is None:
            return self.max_iterations
        room = max(self.available - self.calls(self.seed_cost), 0)
        cost = self.per_accepted if accepted else self.per_rejected
        return min(room // max(cost, 1), self.max_iterations)

    def message(self) -> str:
        head = (
            "no metric-call budget"
            if self.available is None
            else f"{self.available} metric calls left"
        )
        per_row = (
            "" if self.calls_per_row == 1 else f" ({self.calls_per_row:.3g} model calls per row)"
        )
        return (
            f"gepa plan: {head}; a proposal costs {self.per_rejected} calls{per_row} on the "
            f"minibatch + {self.per_accepted - self.per_rejected} on the Pareto set when "
            f"accepted: {self.proposals(accepted=True)} "
            f"to {self.proposals(accepted=False)} proposals (max_iterations "
            f"{self.max_iterations})"
        )


def plan_budget(
    ctx: StrategyContext, pool_rows: int, minibatch_rows: int, seed_cached: bool
) -> BudgetPlan:
    """The plan for this run: rows x task models x the calls each makes (pipelines: several)."""
    models = len(ctx.settings.models)
    budget = ctx.budget
    return BudgetPlan(
        available=budget.remaining_calls,
        pool=pool_rows * models,
        minibatch=minibatch_rows * models,
        seed_cost=0 if seed_cached else pool_rows * models,
        max_iterations=max(ctx.settings.max_iterations - ctx.iteration, 0),
        calls_per_row=budget.calls_per_row,
    )
