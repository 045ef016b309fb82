"""``mipro``: instructions x demo sets x demo count, searched jointly by TPE (after MIPROv2).

Candidates; no reasoning model is needed, with one it writes more instructions:

- instructions: the starting prompt (index 0), the data-derived edits of ``instructions``
  (:func:`derived_instructions`: the label set, the output format, per-label guidance, the
  tool-call and JSON rules) and, with a reasoning model (and ``use_reasoning_model``),
  ``proposed_instructions`` written by it from the prompt, the label set and a few train rows
  (one call through :func:`reflex.api.ask`, templates ``mipro.system`` / ``mipro.propose``);
  ``max_instructions`` in all;
- demo sets: ``num_demo_sets`` draws of ``max(demo_counts)`` demos from ``fewshot``'s pool
  (train rows only, balanced across labels: :func:`demo_pool`, :func:`pick_demos`);
- demo count: one of ``demo_counts``, the first that many demos of the set (0: none).

Search, in MIPROv2's shape: each trial, TPE (:mod:`._tpe`, seeded from the run's rng, told every
past trial) picks a combination, which is scored on a fresh seeded minibatch of
``minibatch_size`` val rows (:func:`minibatch_score`) and recorded as an iteration that is not
measured on full val: ``rejected``, with its minibatch score, its paired change against the
incumbent on the same rows (cached: the incumbent was measured on every val row) and its
params on ``IterationRecord.lineage``. Every ``full_eval_every`` trials a round ends: the
``full_eval_top`` combinations with the best mean over every val row they were scored on, not
measured yet and ahead of the incumbent on those same rows, are measured on every val row by
``ctx.record_iteration``; under ``--race`` the ``race_top`` best are raced on growing val rungs
instead, the clearly worse dropped early (:mod:`._mipro_finals`). Only a full val score, through
the run's ``--accept`` gate and its best-of-many correction (which counts every combination a
trial looked at), can make a combination the best prompt.

Each round is a phase named ``mipro`` (``phase_history``); early stopping ends a round, never
the search (a trial is not a val measurement). The search ends at the iteration or call budget
(room is kept for the round's full evaluation), or when the space holds one prompt only.

Calls: a trial ``minibatch_size`` val rows per task model (rows answered before are cached), a
full evaluation the val rows its combination was not scored on yet; plus ``fewshot``'s one-off
bootstrap when the pool needs one. A budget preset counts a round as one candidate
(:mod:`reflex.run.presets`). Without a val split the minibatches and the selection are on train.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from reflex.api import (
    PHASES,
    BaseStrategy,
    ConfigurationError,
    EvalSnapshot,
    Example,
    Outcome,
    StrategyRegistrar,
    ask,
    hookimpl,
    parse_prompts,
    render,
    system_prompt,
)

from ._common import join_sections, references
from ._mipro_finals import Combo, Finals
from ._tpe import OPTUNA_MISSING, Space, Trial, optuna_available, suggest
from .fewshot import Demo, FewshotOptions, demo_pool, pick_demos, render_demos
from .instructions import InstructionsOptions, derived_instructions, label_set

if TYPE_CHECKING:
    from reflex.api import StrategyContext

__all__ = ["MiproOptions", "MiproStrategy", "minibatch_score", "register_strategies"]

SHOWN_EXAMPLES = 5  # train rows the reasoning model is shown when it writes instructions


class MiproOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_instructions: int = Field(
        default=6, gt=0, description="instruction candidates, the starting prompt first"
    )
    proposed_instructions: int = Field(
        default=3, ge=0, description="of them written by the reasoning model, when one is given"
    )
    use_reasoning_model: bool = Field(
        default=True, description="ask the reasoning model for instructions when one is given"
    )
    instructions: InstructionsOptions = Field(default_factory=InstructionsOptions)
    num_demo_sets: int = Field(default=4, gt=0, description="demo sets drawn from train")
    demo_counts: list[int] = Field(
        default_factory=lambda: [0, 1, 2, 4],
        min_length=1,
        description="demo counts searched; 0 is no demos",
    )
    demo_source: Literal["auto", "bootstrap", "labels"] = Field(
        default="auto", description="the demo pool, as fewshot's demo_source"
    )
    demo_format: Literal["turns", "system"] = Field(
        default="turns", description="demos as chat turns or as system-prompt text"
    )
    minibatch_size: int = Field(default=8, gt=0, description="val rows each trial is scored on")
    full_eval_every: int = Field(
        default=5, gt=0, description="trials per round; a round ends with full val evaluations"
    )
    full_eval_top: int = Field(
        default=1, gt=0, description="best combinations by mean measured on full val per round"
    )
    race_top: int = Field(
        default=4,
        gt=0,
        description="under --race: best combinations by mean raced on growing val rungs per round",
    )
    startup_trials: int = Field(
        default=6, ge=0, description="random trials before TPE models the scores"
    )

    @model_validator(mode="after")
    def _needs_optuna(self) -> MiproOptions:
        if any(n < 0 for n in self.demo_counts):
            raise ValueError("demo_counts must be 0 or more")
        if not optuna_available():  # not a ValueError: the one-line message, as it is
            raise ConfigurationError(OPTUNA_MISSING)
        return self


def minibatch_score(
    ctx: StrategyContext, prompt: str, rows: Sequence[Example], label: str
) -> EvalSnapshot:
    """A trial's score on its minibatch: the one place a trial's rows are evaluated (what TPE
    is told; under ``--race`` the round's finalists are raced: :mod:`._mipro_finals`)."""
    return ctx.evaluate(prompt, rows, label=label)


class MiproStrategy(BaseStrategy[MiproOptions]):
    name: ClassVar[str] = "mipro"
    Options: ClassVar[type[BaseModel]] = MiproOptions
    requires_reasoning_model: ClassVar[bool] = False
    derives_from_data: ClassVar[bool] = True

    def optimize(self, ctx: StrategyContext) -> None:
        base = ctx.best_prompt
        instructions = self._instructions(ctx, base)
        demo_sets = self._demo_sets(ctx, base)
        counts = sorted(set(self.options.demo_counts)) if demo_sets else [0]
        space = Space(len(instructions), max(1, len(demo_sets)), tuple(counts))
        ctx.log(
            "mipro_space",
            instructions=[edit for edit, _ in instructions],
            demo_sets=[[d.example_id for d in demos] for demos in demo_sets],
            demo_counts=counts,
            prompts=space.size,
        )
        if space.size <= 1:
            ctx.log(
                "no_candidates",
                phase=ctx.capability(PHASES).phase,
                reason="no instruction edit and no demo: the space holds the starting prompt only",
            )
            return
        _Search(ctx, self.options, space, instructions, demo_sets).run()

    def _instructions(self, ctx: StrategyContext, base: str) -> list[tuple[str, str]]:
        opts = self.options
        found = [("the starting prompt", base)]
        found += derived_instructions(ctx, base, opts.instructions)
        reasoning = bool(ctx.settings.reasoning_model) and opts.use_reasoning_model
        room = min(opts.proposed_instructions, opts.max_instructions - len(found))
        if reasoning and room > 0:
            written = self._proposed(ctx, base, [p for _, p in found], room)
            found += [(f"reasoning model's instruction {n}", p) for n, p in enumerate(written, 1)]
        return found[: opts.max_instructions]

    def _proposed(self, ctx: StrategyContext, base: str, tried: list[str], count: int) -> list[str]:
        """Instructions the reasoning model writes from the prompt and the data (one call)."""
        train = list(ctx.train)
        shown = ctx.rng.sample(train, min(SHOWN_EXAMPLES, len(train)))
        labels = label_set(references(train), self.options.instructions.max_labels)
        summary = (
            f"{len(train)} train rows; the answer is one of {len(labels)} labels: "
            + ", ".join(labels)
            if labels
            else f"{len(train)} train rows; answers are free text"
        )
        examples = "\n".join(f"- {e.input[:300]!r} -> {(e.ideal or '')[:300]!r}" for e in shown)
        user = render(
            "mipro.propose",
            ctx.settings.reasoning_templates,
            current=base,
            summary=summary,
            examples=examples or "- (none)",
            count=count,
        )
        messages = [
            {"role": "system", "content": system_prompt(ctx, "mipro.system")},
            {"role": "user", "content": user},
        ]
        found, _ = ask(
            ctx, "mipro: write instructions", messages, lambda a: parse_prompts(a, exclude=tried)
        )
        return (found or [])[:count]

    def _demo_sets(self, ctx: StrategyContext, base: str) -> list[list[Demo]]:
        opts = self.options
        size = max(opts.demo_counts)
        if size == 0:
            return []
        pool_options = FewshotOptions(demo_source=opts.demo_source, demo_format=opts.demo_format)
        pool = demo_pool(ctx, base, pool_options)
        sets: list[list[Demo]] = []
        seen: set[tuple[str, ...]] = set()
        for _ in range(3 * opts.num_demo_sets):  # spare draws: a small pool repeats sets
            if len(sets) >= opts.num_demo_sets or not pool:
                break
            demos = pick_demos(pool, min(size, len(pool)), ctx.rng)
            key = tuple(d.example_id for d in demos)
            if key not in seen:
                seen.add(key)
                sets.append(demos)
        return sets


class _Search:
    """One run of the trial loop (see the module docstring)."""

    def __init__(
        self,
        ctx: StrategyContext,
        options: MiproOptions,
        space: Space,
        instructions: list[tuple[str, str]],
        demo_sets: list[list[Demo]],
    ) -> None:
        self.ctx, self.opts, self.space = ctx, options, space
        self.instructions, self.demo_sets = instructions, demo_sets
        self.label = "val" if len(ctx.val) else "train"
        self.rows = list(ctx.val) if len(ctx.val) else list(ctx.train)
        self.trials: list[Trial] = []
        self.combos: dict[str, Combo] = {}
        self.measured = {ctx.best_prompt}  # the incumbent is measured on every selection row
        self.finals = Finals(ctx, self.rows, self.label, self.measured)

    def run(self) -> None:
        ctx, phases = self.ctx, self.ctx.capability(PHASES)
        rounds = 0
        while self._trial_fits():  # a round starts only with room for a trial
            rounds += 1
            start, first = ctx.best_val, ctx.iteration
            phases.begin_phase("mipro")
            tried = 0
            while tried < self.opts.full_eval_every and self._trial_fits():
                self._trial()
                tried += 1
            self._full_evaluations()
            phases.end_phase(
                round=rounds,
                trials=tried,
                start_score=start,
                end_score=ctx.best_val,
                iterations=ctx.iteration - first,
            )

    def _over(self) -> bool:
        """The search must end: its iterations are used up or the run stopped for a reason
        other than early stopping (which ends a round only)."""
        ctx = self.ctx
        if ctx.iteration >= ctx.settings.max_iterations:
            return True
        stop = ctx.capability(PHASES).stop
        return ctx.should_stop and (stop is None or not stop.per_phase)

    def _trial_fits(self) -> bool:
        """Room for one more trial and still this round's full evaluations (iterations and
        calls), and no stop other than early stopping."""
        ctx = self.ctx
        if self._over():
            return False
        if ctx.settings.max_iterations - ctx.iteration <= self.opts.full_eval_top:
            return False
        left = ctx.budget.remaining_calls
        need = self.finals.calls(min(self.opts.minibatch_size, len(self.rows)) + len(self.rows))
        return left is None or left >= need

    def _prompt(self, trial: Trial) -> str:
        instruction = self.instructions[trial.instruction][1]
        if not trial.demos or not self.demo_sets:
            return instruction
        demos = self.demo_sets[trial.demo_set][: trial.demos]
        return join_sections(instruction, render_demos(demos, self.opts.demo_format))

    def _trial(self) -> None:
        ctx = self.ctx
        chosen = suggest(
            self.space, self.trials, seed=ctx.rng.randrange(2**31), startup=self.opts.startup_trials
        )
        prompt = self._prompt(chosen)
        rows = ctx.rng.sample(self.rows, min(self.opts.minibatch_size, len(self.rows)))
        snapshot = minibatch_score(ctx, prompt, rows, self.label)
        incumbent = ctx.evaluate(ctx.best_prompt, rows, label=self.label)  # cached
        score = snapshot.mean_score
        self.trials.append(Trial(chosen.instruction, chosen.demo_set, chosen.demos, score))
        combo = self.combos.setdefault(prompt, Combo(prompt, chosen.params()))
        combo.trials += 1
        combo.rows.update(snapshot.per_example())
        combo.ids.update(e.id for e in rows)
        change = score - incumbent.mean_score
        entry = {
            "type": "trial",
            "trial": len(self.trials),
            **chosen.params(),
            "minibatch_score": round(score, 6),
            "minibatch_rows": len(rows),
            "split": self.label,
        }
        ctx.log("mipro_trial", **entry, change=round(change, 6))
        reason = (
            f"mipro trial {len(self.trials)}: {score:.3f} on {len(rows)} {self.label} rows "
            f"(incumbent {incumbent.mean_score:.3f}); only full {self.label} selects"
        )
        ctx.record_iteration(
            prompt,
            None,
            Outcome.rejected(reason),
            reasoning=self._describe(chosen),
            change=change,
            lineage=[entry],
        )

    def _describe(self, trial: Trial) -> str:
        edit = self.instructions[trial.instruction][0]
        shown = f"{trial.demos} demos of set {trial.demo_set}" if trial.demos else "no demos"
        return f"mipro: instruction {trial.instruction} ({edit}), {shown}"

    def _full_evaluations(self) -> None:
        """The round's finalists measured on every selection row, or raced under ``--race``."""
        self.finals.run(
            self.combos.values(), top=self.opts.full_eval_top, race_top=self.opts.race_top
        )


@hookimpl
def register_strategies(register: StrategyRegistrar) -> None:
    register(MiproStrategy)
