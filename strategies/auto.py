"""``auto``: run the reasoning-free strategies in order, and ``iterative`` when it can.

Phases, each opened with ``ctx.begin_phase(name)`` (so they show in ``result.phase_history``):

1. ``instructions``: data-derived edits (label set, output format, per-label guidance);
2. ``fewshot``: demo sets appended to the best prompt so far (it starts from ``ctx.best_prompt``);
3. ``iterative``: only when a reasoning model is configured (``ctx.config.reasoning_model``)
   and ``use_reasoning_model`` is True; it revises the best prompt so far.

Without a reasoning model no reasoning call is ever made. The iteration budget
(``max_iterations`` minus iterations already recorded) is split up front: ``iterative`` keeps a
third (at least one), ``instructions`` gets two fifths of the rest (at least one), ``fewshot``
what remains; a phase that proposes fewer candidates leaves its share to the next one. Early
stopping and budget exhaustion are run-wide: once ``ctx.should_stop`` is True no later phase
starts. Model calls per iteration are those of the phase's strategy (see their docstrings).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from reflex.context import StrategyContext
from reflex.hookspecs import hookimpl

from .fewshot import FewshotOptions, FewshotStrategy
from .instructions import InstructionsOptions, InstructionsStrategy
from .iterative import IterativeOptions, IterativeStrategy

__all__ = ["AutoOptions", "AutoStrategy", "plan_iterations", "register_strategies"]


class AutoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    instructions: InstructionsOptions = Field(default_factory=InstructionsOptions)
    fewshot: FewshotOptions = Field(default_factory=FewshotOptions)
    iterative: IterativeOptions = Field(default_factory=IterativeOptions)
    use_reasoning_model: bool = Field(
        default=True, description="add an iterative phase when a reasoning model is configured"
    )


def plan_iterations(total: int, reasoning: bool) -> dict[str, int]:
    """Iterations each phase may use out of ``total``: ``{"instructions", "iterative"}``."""
    reserve = max(1, total // 3) if reasoning and total > 0 else 0
    instructions = max(1, (total - reserve) * 2 // 5) if total > reserve else 0
    return {"instructions": instructions, "iterative": reserve}


class AutoStrategy:
    name: ClassVar[str] = "auto"
    Options: ClassVar[type[BaseModel]] = AutoOptions
    requires_reasoning_model: ClassVar[bool] = False
    derives_from_data: ClassVar[bool] = True

    def __init__(self, options: BaseModel) -> None:
        assert isinstance(options, AutoOptions)
        self.options = options

    def optimize(self, ctx: StrategyContext) -> None:
        state = ctx.state.setdefault(self.name, {})
        reasoning = bool(ctx.config.reasoning_model) and self.options.use_reasoning_model
        plan = state.setdefault(
            "plan", plan_iterations(ctx.max_iterations - ctx.iteration, reasoning)
        )
        ctx.log("auto_plan", reasoning=reasoning, **plan)
        phases = ["instructions", "fewshot", *(["iterative"] if reasoning else [])]
        for index, phase in enumerate(phases):
            if index < int(state.get("done", 0)):
                continue  # resumed: phase already finished
            if ctx.should_stop:
                return
            self._run_phase(ctx, phase, plan)
            state["done"] = index + 1

    def _run_phase(self, ctx: StrategyContext, phase: str, plan: dict[str, int]) -> None:
        opts = self.options
        if phase == "instructions":
            cap = min(opts.instructions.max_candidates, plan["instructions"])
            if cap <= 0:
                return
            ctx.begin_phase(phase)
            InstructionsStrategy(
                opts.instructions.model_copy(update={"max_candidates": cap})
            ).optimize(ctx)
        elif phase == "fewshot":
            cap = ctx.max_iterations - ctx.iteration - plan["iterative"]
            if cap <= 0:
                return
            ctx.begin_phase(phase)
            FewshotStrategy(
                opts.fewshot.model_copy(
                    update={"num_candidates": min(opts.fewshot.num_candidates, cap)}
                )
            ).optimize(ctx)
        else:
            ctx.begin_phase(phase)
            # iterative starts from ctx.state["current"] (default: the initial prompt); seed it
            # with the best prompt so far so it refines what the earlier phases found.
            ctx.state.setdefault("current", ctx.best_prompt)
            IterativeStrategy(opts.iterative).optimize(ctx)


@hookimpl
def register_strategies(register) -> None:  # type: ignore[no-untyped-def]
    register(AutoStrategy)
