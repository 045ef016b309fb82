"""``sequence``: the user's own order of strategies, run as phases on one budget.

``-s instructions,fewshot,iterative`` (Python: ``set_strategy("instructions,fewshot,iterative")``)
runs those registered strategies one after another, each from the best prompt so far, as
``auto`` runs its axes (the ``PHASES`` and ``STRATEGIES`` capabilities), but in the order given
instead of by evidence. ``steps`` names them; ``options`` holds each step's options by name
(checked before the run's first call, like the steps and their reasoning model).

One budget: the iterations the run has (``max_iterations``, or under ``--max-calls`` the val
passes the calls still pay for, when fewer: ``auto``'s ``affordable_passes``) are shared out as
the run goes: each step may use an equal share of what is left for the steps still to come
(at least one), so iterations a step leaves unused (it finished or stopped early) go to the
next ones; the last step may use every iteration left. Early stopping ends a step, not the
run; the budget, the score threshold or ``max_iterations`` end the run. ``result.phase_history``
has one entry per step run, with ``start_score``, ``end_score``, ``iterations`` and ``stop``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from reflex.api import (
    PHASES,
    STRATEGIES,
    BaseStrategy,
    BudgetExhausted,
    StrategyRegistrar,
    hookimpl,
)

from .auto import _close_phase, _run_over, affordable_passes  # auto's phase machinery

if TYPE_CHECKING:
    from reflex.api import Strategy, StrategyContext

__all__ = ["SequenceOptions", "SequenceStrategy", "register_strategies"]

COMPOSITES = frozenset({"auto", "sequence"})  # strategies that run others: not a step
PHASED = frozenset({"mipro"})  # strategies that open phases of their own (rounds): not a step


class SequenceOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    steps: list[str] = Field(min_length=1, description="strategies run as phases, in order")
    options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="each step's options, by strategy name"
    )

    @field_validator("steps")
    @classmethod
    def _steps(cls, steps: list[str]) -> list[str]:
        names = [step.strip() for step in steps]
        if not all(names):
            raise ValueError(f"a step has no name: {steps!r}")
        nested = sorted(set(names) & COMPOSITES)
        if nested:
            raise ValueError(f"{nested[0]!r} runs other strategies itself: it is no step")
        phased = sorted(set(names) & PHASED)
        if phased:
            raise ValueError(
                f"{phased[0]!r} runs its own phases (its rounds): it is no step; run it alone"
            )
        return names


class SequenceStrategy(BaseStrategy[SequenceOptions]):
    name: ClassVar[str] = "sequence"
    Options: ClassVar[type[BaseModel]] = SequenceOptions
    requires_reasoning_model: ClassVar[bool] = False  # each step's own need is checked
    derives_from_data: ClassVar[bool] = False

    def optimize(self, ctx: StrategyContext) -> None:
        steps = self.options.steps
        registry = ctx.capability(STRATEGIES)
        strategies = [registry.build_strategy(s, self.options.options.get(s, {})) for s in steps]
        first = ctx.iteration
        total = ctx.settings.max_iterations - first
        passes = affordable_passes(ctx)
        if passes is not None:  # a small call budget: share what it pays for
            total = min(total, max(1, passes))
        ctx.log("sequence_plan", steps=steps, iterations=total)
        for index, (name, strategy) in enumerate(zip(steps, strategies, strict=True)):
            if _run_over(ctx):
                return
            left = ctx.settings.max_iterations - ctx.iteration
            unused = total - (ctx.iteration - first)
            remaining = len(steps) - index
            cap = left if remaining == 1 else min(left, max(1, unused // remaining))
            _run_step(ctx, name, strategy, cap)


def _run_step(ctx: StrategyContext, name: str, strategy: Strategy[Any], cap: int) -> None:
    """One step as a phase of at most ``cap`` iterations, from the best prompt so far."""
    start, first = ctx.best_val, ctx.iteration
    ctx.state.pop(name, None)  # a step's own progress (fewshot's draws...) starts afresh
    ctx.state["current"] = ctx.best_prompt  # iterative revises ctx.state["current"]
    phases = ctx.capability(PHASES)
    phases.begin_phase(name, max_iterations=cap)
    phases.end_phase(start_score=start, split="val" if len(ctx.val) else "train")
    try:
        strategy.optimize(ctx)
    except BudgetExhausted as exc:  # the run ends here: its last phase is still complete
        _close_phase(ctx, first, f"budget exhausted: {exc.reason}")
        raise
    capped = ctx.iteration - first >= cap
    _close_phase(ctx, first, phases.stop_reason or ("phase cap" if capped else "finished"))


@hookimpl
def register_strategies(register: StrategyRegistrar) -> None:
    register(SequenceStrategy)
