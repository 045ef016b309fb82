"""``auto``: run one axis after another, each chosen from the evidence, each from the best prompt.

Axes: ``instructions`` and ``fewshot`` (data-derived, no reasoning model), and with a reasoning
model (``ctx.settings.reasoning_model`` set and ``use_reasoning_model`` on) also ``iterative``,
``structural``, ``pdo`` and any registered strategy that declares ``auto_eligible = True``
(options from ``extra_options[name]``). ``axes`` restricts the choice.

Before each phase ``_evidence.gather_evidence`` looks at label availability, how the best
prompt so far fails on a fixed probe batch (in reasoning mode, and on tool-call and JSON tasks
also without it: ``batch_size`` train rows, usually cached; the failure kinds of
:func:`reflex.api.failure_kind` count), the score trajectory of earlier phases and the
iterations and metric calls left; ``_evidence.choose_axis`` picks the axis. Without a reasoning
model this reduces to the reasoning-free plan: ``instructions`` then ``fewshot`` (``fewshot``
first when wrong argument or field values outweigh format and function failures, with
``instructions``' share of the iterations kept for it), and no reasoning call is ever made.

Iterations are split up front (``plan_iterations``), out of the iterations left or, under a
call budget, the full val passes it still pays for when fewer (``affordable_passes``):
reasoning axes keep a third (at least one), ``instructions`` gets two fifths of the rest (at
least one), ``fewshot`` what remains; a reasoning phase may use half of what is left (at
least ``min_phase_iterations``). Each phase opens with ``begin_phase(name,
max_iterations=cap)``, starts from ``ctx.best_prompt`` and shares the run's context, so
batch size, seed, budgets and workers carry over unchanged.
Early stopping ends a phase, not the run; the budget, the score threshold or
``max_iterations`` end the run. ``result.phase_history`` entries carry ``start_score`` and
``end_score`` (best score on ``split``, val unless the run has none), ``iterations``,
``stop`` and the ``evidence`` behind the choice.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from reflex.api import (
    PHASES,
    STRATEGIES,
    BaseStrategy,
    BudgetExhausted,
    ConfigurationError,
    Strategy,
    StrategyRegistrar,
    hookimpl,
)

from ._evidence import (
    Evidence,
    PhaseOutcome,
    calls_per_iteration,
    choose_axis,
    gather_evidence,
)
from ._rules import structured_task
from .fewshot import FewshotOptions, FewshotStrategy
from .instructions import InstructionsOptions, InstructionsStrategy
from .iterative import IterativeOptions, IterativeStrategy
from .pdo import PDOOptions, PDOStrategy
from .structural import StructuralOptions, StructuralStrategy

if TYPE_CHECKING:
    from reflex.api import StrategyContext

__all__ = [
    "AutoOptions",
    "AutoStrategy",
    "affordable_passes",
    "plan_iterations",
    "register_strategies",
]

BUILTIN_AXES = ("instructions", "fewshot", "iterative", "structural", "pdo")
#: A raced candidate's planned share of a val pass (reflex.run.stopping.RACED_PASS, the same).
RACED_PASS = 0.5


class AutoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    instructions: InstructionsOptions = Field(default_factory=InstructionsOptions)
    fewshot: FewshotOptions = Field(default_factory=FewshotOptions)
    iterative: IterativeOptions = Field(default_factory=IterativeOptions)
    structural: StructuralOptions = Field(default_factory=StructuralOptions)
    pdo: PDOOptions = Field(default_factory=PDOOptions)
    use_reasoning_model: bool = Field(
        default=True, description="use reasoning axes when a reasoning model is configured"
    )
    axes: list[str] | None = Field(default=None, description="axes auto may choose from")
    extra_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="options of registered auto-eligible strategies"
    )
    max_repeats: int = Field(default=2, gt=0, description="phases per reasoning axis at most")
    min_phase_iterations: int = Field(default=2, gt=0)


def plan_iterations(total: int, reasoning: bool) -> dict[str, int]:
    """Iterations each phase may use out of ``total``: ``{"instructions", "iterative"}``.

    ``iterative`` is the share kept for the reasoning axes (all of them together).
    """
    reserve = max(1, total // 3) if reasoning and total > 0 else 0
    instructions = max(1, (total - reserve) * 2 // 5) if total > reserve else 0
    return {"instructions": instructions, "iterative": reserve}


def affordable_passes(ctx: StrategyContext) -> int | None:
    """Full val passes the call budget still pays for; None without a call budget or val rows.

    The engine resolves ``max_iterations`` to at least five, so under ``--max-calls 150`` the
    plan would hand ``instructions`` two candidates and leave ``fewshot`` nothing it can pay for.
    Under ``--race`` these are raced candidates, each planned at half a pass, as the engine
    plans them (its ``RACED_PASS``): the race stops at the budget whatever this plans.
    """
    left = ctx.budget.remaining_calls
    if left is None or not len(ctx.val):
        return None
    per_candidate = calls_per_iteration(ctx, screened=False)
    if ctx.settings.race:  # a raced candidate is planned at half a val pass (RACED_PASS)
        per_candidate = max(1, math.ceil(per_candidate * RACED_PASS))
    return left // per_candidate


def _extra_axes(ctx: StrategyContext, reasoning: bool) -> list[str]:
    """Registered strategies (not built in) that declare themselves auto-eligible."""
    return [
        name
        for name, cls in sorted(ctx.capability(STRATEGIES).strategies().items())
        if name not in BUILTIN_AXES
        and name != "auto"
        and cls.auto_eligible
        and (reasoning or not cls.requires_reasoning_model)
    ]


class AutoStrategy(BaseStrategy[AutoOptions]):
    name: ClassVar[str] = "auto"
    Options: ClassVar[type[BaseModel]] = AutoOptions
    requires_reasoning_model: ClassVar[bool] = False
    derives_from_data: ClassVar[bool] = True

    def optimize(self, ctx: StrategyContext) -> None:
        reasoning = bool(ctx.settings.reasoning_model) and self.options.use_reasoning_model
        total = ctx.settings.max_iterations - ctx.iteration
        passes = affordable_passes(ctx)
        if passes is not None:  # a small call budget: plan what it pays for, not the iterations
            total = min(total, max(1, passes))
        plan = plan_iterations(total, reasoning)
        extras = _extra_axes(ctx, reasoning)
        axes = self._axes(reasoning, extras)
        ctx.log("auto_plan", reasoning=reasoning, axes=axes, **plan)
        history: list[PhaseOutcome] = []
        probe = reasoning or structured_task(list(ctx.train)) is not None
        while not _run_over(ctx):
            evidence = gather_evidence(ctx, probe=probe)
            axis = choose_axis(evidence, history, axes, self.options.max_repeats)
            ctx.log("auto_choice", axis=axis, evidence=evidence.to_dict())
            if axis is None:
                return
            pending = (  # instructions may still run (it has candidates and has not run)
                evidence.labels
                and "instructions" in axes
                and all(h.axis != "instructions" for h in history)
            )
            cap = self._cap(ctx, axis, plan, pending)
            if cap <= 0:
                history.append(PhaseOutcome(axis, 0.0, 0))
                continue
            history.append(self._run_phase(ctx, axis, cap, evidence, extras))

    def _axes(self, reasoning: bool, extras: list[str]) -> list[str]:
        axes = [*BUILTIN_AXES, *extras] if reasoning else ["instructions", "fewshot"]
        if self.options.axes is not None:
            unknown = sorted(set(self.options.axes) - {*BUILTIN_AXES, *extras})
            if unknown:
                raise ConfigurationError(
                    f"auto option 'axes': unknown axis {unknown}; available: "
                    f"{', '.join([*BUILTIN_AXES, *extras])}"
                )
            axes = [a for a in axes if a in self.options.axes]
        return axes

    def _cap(self, ctx: StrategyContext, axis: str, plan: dict[str, int], pending: bool) -> int:
        """The phase's iterations; ``pending``: ``instructions`` may still run after it."""
        left = ctx.settings.max_iterations - ctx.iteration
        if axis == "instructions":
            return min(self.options.instructions.max_candidates, plan["instructions"], left)
        if axis == "fewshot":  # every iteration left, unless num_candidates was set
            fewshot = self.options.fewshot
            room = left - plan["iterative"]
            if pending:  # fewshot first: instructions keeps its share
                room -= min(self.options.instructions.max_candidates, plan["instructions"])
            return (
                min(fewshot.num_candidates, room)
                if "num_candidates" in fewshot.model_fields_set
                else room
            )
        return min(left, max(self.options.min_phase_iterations, -(-left // 2)))

    def _run_phase(
        self,
        ctx: StrategyContext,
        axis: str,
        cap: int,
        evidence: Evidence,
        extras: list[str],
    ) -> PhaseOutcome:
        start, first = ctx.best_val, ctx.iteration
        phases = ctx.capability(PHASES)
        phases.begin_phase(axis, max_iterations=cap)
        phases.end_phase(
            start_score=start, split="val" if len(ctx.val) else "train", evidence=evidence.to_dict()
        )
        try:
            self._strategy(ctx, axis, cap, extras).optimize(ctx)
        except BudgetExhausted as exc:  # the run ends here: its last phase is still complete
            _close_phase(ctx, first, f"budget exhausted: {exc.reason}")
            raise
        stop = phases.stop_reason or ("phase cap" if ctx.iteration - first >= cap else "finished")
        _close_phase(ctx, first, stop)
        gain = (ctx.best_val or 0.0) - (start or 0.0)
        return PhaseOutcome(axis, gain, ctx.iteration - first)

    def _strategy(
        self, ctx: StrategyContext, axis: str, cap: int, extras: list[str]
    ) -> Strategy[Any]:
        opts = self.options
        if axis == "instructions":
            return InstructionsStrategy(
                opts.instructions.model_copy(update={"max_candidates": cap})
            )
        if axis == "fewshot":
            ctx.state.pop("fewshot", None)  # start from the best prompt so far
            return FewshotStrategy(opts.fewshot.model_copy(update={"num_candidates": cap}))
        if axis == "iterative":
            # iterative revises ctx.state["current"]: point it at the best prompt so far.
            ctx.state["current"] = ctx.best_prompt
            return IterativeStrategy(opts.iterative)
        if axis == "structural":
            return StructuralStrategy(opts.structural)
        if axis == "pdo":
            return PDOStrategy(opts.pdo)
        return ctx.capability(STRATEGIES).build_strategy(axis, opts.extra_options.get(axis, {}))


def _close_phase(ctx: StrategyContext, first: int, stop: str) -> None:
    """Record the phase's end: best score, last iteration, iterations run and why it stopped."""
    ctx.capability(PHASES).end_phase(
        end_score=ctx.best_val,
        end_iteration=ctx.iteration,
        iterations=ctx.iteration - first,
        stop=stop,
    )


def _run_over(ctx: StrategyContext) -> bool:
    """True when the run (not just a phase) must end: a stop reason other than early stopping."""
    if ctx.iteration >= ctx.settings.max_iterations:
        return True
    stop = ctx.capability(PHASES).stop
    return stop is not None and not stop.per_phase


@hookimpl
def register_strategies(register: StrategyRegistrar) -> None:
    register(AutoStrategy)
