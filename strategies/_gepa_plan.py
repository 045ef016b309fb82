"""The up-front budget plan of ``gepa``: how many proposals a metric-call budget buys."""

from __future__ import annotations

from dataclasses import dataclass

from reflex.context import StrategyContext

__all__ = ["BudgetPlan", "plan_budget"]


@dataclass(frozen=True)
class BudgetPlan:
    """What a metric-call budget buys: proposals if every one is accepted / rejected."""

    available: int | None
    pool: int
    minibatch: int
    seed_cost: int
    max_iterations: int

    @property
    def per_rejected(self) -> int:
        return 2 * self.minibatch

    @property
    def per_accepted(self) -> int:
        return 2 * self.minibatch + self.pool

    def proposals(self, *, accepted: bool) -> int:
        if self.available is None:
            return self.max_iterations
        room = max(self.available - self.seed_cost, 0)
        cost = self.per_accepted if accepted else self.per_rejected
        return min(room // max(cost, 1), self.max_iterations)

    def message(self) -> str:
        head = (
            "no metric-call budget"
            if self.available is None
            else f"{self.available} metric calls left"
        )
        return (
            f"gepa plan: {head}; a proposal costs {self.per_rejected} calls on the minibatch "
            f"+ {self.pool} on the Pareto set when accepted: {self.proposals(accepted=True)} "
            f"to {self.proposals(accepted=False)} proposals (max_iterations "
            f"{self.max_iterations})"
        )


def plan_budget(
    ctx: StrategyContext, pool_rows: int, minibatch_rows: int, seed_cached: bool
) -> BudgetPlan:
    """The plan for this run: calls per task model are multiplied by the number of models."""
    models = len(ctx.config.models)
    limit = ctx.config.budget.max_metric_calls
    budget = ctx.budget
    available = None if limit is None else limit - budget.metric_calls - budget.reserved_calls
    return BudgetPlan(
        available=available,
        pool=pool_rows * models,
        minibatch=minibatch_rows * models,
        seed_cost=0 if seed_cached else pool_rows * models,
        max_iterations=max(ctx.max_iterations - ctx.iteration, 0),
    )
