"""``gepa``: reflective prompt evolution over a per-instance Pareto front (after GEPA).

Candidates are maps of named text components (a plain prompt is one component, ``system``;
see :mod:`reflex.data.prompts`). Each iteration:

1. sample a parent from the Pareto front of the per-example validation scores (weight = the
   rows it wins; ``epsilon`` and ``top_k`` widen / narrow the front);
2. run it on a seeded train minibatch (``minibatch_size``, default 3); if it is perfect there,
   record the iteration as rejected without a reasoning call;
3. show the reasoning model the parent's outputs and the metrics' feedback, plus earlier
   rewrites of that component that did not help, and let it rewrite one component
   (round-robin) or all of them (:mod:`._gepa_reflect`);
4. run the child on the same minibatch; accept it only if it scores strictly higher, and only
   then score it on the whole validation set (it joins the front). A child whose answers break
   the JSON schema or the tool-call format more often than the parent's there is rejected first
   (``ctx.capability(SCREENING).format_screen``). Under ``strict_leakage`` a
   child (or merge) that copies held-out text is rejected before that val evaluation
   (``ctx.capability(SCREENING).leakage_screen``).

After an accepted child, a multi-component run tries one *merge*: two candidates that improved
different components since a common ancestor are combined, and the merge is kept if it does at
least as well as the better of them on a minibatch. Without a val split the front is built on
the train split instead.

Calls per proposal: ``2 * minibatch_size`` (parent, child) per task model, plus ``len(val)``
when accepted, times the model calls a pipeline makes per row (its average so far). The plan
is logged (``budget_plan`` event) before the search starts, with a warning when the metric-call
budget buys fewer than ``min_proposals`` proposals. The lineage (parents, changed component,
scores) rides on the iteration records (``IterationRecord.lineage``: the seed on the first, each
accepted child or merge on its own), reported in order as ``result.lineage``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from reflex.api import (
    COMPONENTS,
    SCREENING,
    BaseStrategy,
    EvalSnapshot,
    Example,
    Outcome,
    StrategyRegistrar,
    hookimpl,
)

from ._gepa_plan import BudgetPlan, plan_budget
from ._gepa_reflect import Reflection
from ._merge import Candidate, find_merge
from ._pareto import sample_parent

if TYPE_CHECKING:
    from reflex.api import PromptSpec, StrategyContext

__all__ = ["BudgetPlan", "GepaOptions", "GepaStrategy", "plan_budget", "register_strategies"]

logger = logging.getLogger(__name__)


class GepaOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    minibatch_size: int = Field(default=3, gt=0, description="train rows per acceptance test")
    component_selection: Literal["round_robin", "all"] = Field(
        default="round_robin", description="rewrite one component per iteration, or all"
    )
    epsilon: float = Field(default=0.0, ge=0.0, le=1.0, description="per-row win tolerance")
    top_k: int | None = Field(default=None, gt=0, description="sample among the k best-mean")
    merge: bool = Field(default=True, description="try merges (multi-component prompts)")
    max_merges: int = Field(default=5, ge=0, description="most merge attempts")
    memory: int = Field(default=5, ge=0, description="rejected rewrites shown per component")
    min_proposals: int = Field(default=5, gt=0, description="warn below this many proposals")
    max_chars: int = Field(default=600, gt=20, description="truncate inputs/outputs shown")


class GepaStrategy(BaseStrategy[GepaOptions]):
    name: ClassVar[str] = "gepa"
    Options: ClassVar[type[BaseModel]] = GepaOptions
    requires_reasoning_model: ClassVar[bool] = True

    def __init__(self, options: GepaOptions) -> None:
        super().__init__(options)
        self._cands: list[Candidate] = []
        self._scores: dict[str, dict[str, float]] = {}
        self._reflection = Reflection(
            options.component_selection, options.memory, options.max_chars
        )
        self._merge_due = False
        self._merges_tried: set[tuple[int, int]] = set()
        self._lineage: list[dict[str, object]] = []  # candidates added since the last record

    def optimize(self, ctx: StrategyContext) -> None:
        spec = _spec(ctx)
        pool = list(ctx.val) if len(ctx.val) else list(ctx.train)
        if not spec.is_single:
            ctx.log("gepa_components", components=spec.names)
        batch_rows = min(self.options.minibatch_size, len(ctx.train))
        plan = plan_budget(ctx, len(pool), batch_rows, seed_cached=bool(len(ctx.val)))
        self._announce(ctx, plan)
        seed = ctx.evaluate(spec.render(), pool, label="val")
        self._add(Candidate(0, dict(spec.components), (), (), "seed", 0), seed)
        while not ctx.should_stop:
            if self._merge_due and self._can_merge(ctx):
                self._merge_due = False
                merge = find_merge(self._cands, self._scores, self._merges_tried)
                if merge is not None:
                    self._try_merge(ctx, pool, *merge)
                    continue
            self._reflect(ctx, pool)

    def _announce(self, ctx: StrategyContext, plan: BudgetPlan) -> None:
        text = plan.message()
        logger.info(text)
        ctx.log(
            "budget_plan",
            available=plan.available,
            per_rejected=plan.per_rejected,
            per_accepted=plan.per_accepted,
            calls_per_row=round(plan.calls_per_row, 3),
            proposals_if_all_accepted=plan.proposals(accepted=True),
            proposals_if_all_rejected=plan.proposals(accepted=False),
        )
        few = plan.proposals(accepted=True)
        if plan.available is not None and few < self.options.min_proposals:
            logger.warning(
                "%s; fewer than %d proposals if they are accepted: raise --max-calls, or "
                "shrink the val split or minibatch_size",
                text,
                self.options.min_proposals,
            )

    def _can_merge(self, ctx: StrategyContext) -> bool:
        return (
            self.options.merge
            and len(_spec(ctx).names) > 1
            and len(self._merges_tried) < self.options.max_merges
        )

    def _add(self, cand: Candidate, pool_snap: EvalSnapshot) -> None:
        self._cands.append(cand)
        self._scores[str(cand.id)] = pool_snap.per_example()
        self._lineage.append(cand.to_lineage(pool_snap.mean_score))

    def _record(
        self,
        ctx: StrategyContext,
        text: str,
        train: EvalSnapshot | None,
        outcome: Outcome,
        **fields: Any,
    ) -> None:
        """``ctx.record_iteration``, carrying the candidates added since the last record."""
        ctx.record_iteration(text, train, outcome, lineage=self._lineage, **fields)
        self._lineage = []

    def _batch(self, ctx: StrategyContext) -> list[Example]:
        train = list(ctx.train)
        return ctx.rng.sample(train, min(self.options.minibatch_size, len(train)))

    def _reflect(self, ctx: StrategyContext, pool: list[Example]) -> None:
        spec = _spec(ctx)
        opts = self.options
        parent = self._cands[
            int(sample_parent(self._scores, ctx.rng, epsilon=opts.epsilon, top_k=opts.top_k))
        ]
        batch = self._batch(ctx)
        before = ctx.evaluate(spec.render(parent.components), batch)
        if all(s.score == 1.0 for s in before.samples):
            perfect = Outcome.rejected(f"parent {parent.id} is perfect on this minibatch")
            text = spec.render(parent.components)
            self._record(ctx, text, before, perfect, components=parent.components)
            return
        child, changed, notes, error = self._reflection.propose(ctx, spec, parent, before)
        if error is not None:
            failed = Outcome.failed(error)
            self._record(ctx, spec.render(parent.components), None, failed, reasoning=notes)
            return
        self._judge(ctx, pool, parent, child, changed, batch, before, notes)

    def _judge(
        self,
        ctx: StrategyContext,
        pool: list[Example],
        parent: Candidate,
        child: dict[str, str],
        changed: list[str],
        batch: list[Example],
        before: EvalSnapshot,
        notes: str,
    ) -> None:
        text = _spec(ctx).render(child)
        after = ctx.evaluate(text, batch)
        change = after.mean_score - before.mean_score
        if change <= 0:
            self._reflection.refused(changed, child, after.mean_score, before.mean_score)
            reason = (
                f"minibatch gate: {after.mean_score:.3f} <= parent {parent.id} "
                f"{before.mean_score:.3f}"
            )
            self._reject(ctx, text, after, notes, change, child, reason)
            return
        broken = ctx.capability(SCREENING).format_screen(after, before)
        if broken is not None:
            self._reject(ctx, text, after, notes, change, child, broken)
            return
        if self._leaks(ctx, text, after, notes, change, child):
            return
        full = ctx.evaluate(text, pool, label="val")
        cand = Candidate(
            len(self._cands),
            child,
            (parent.id,),
            tuple(changed),
            "reflection",
            ctx.iteration + 1,  # the iteration recorded next
            (before.mean_score, after.mean_score),
        )
        self._add(cand, full)
        train = after if len(ctx.val) else full
        self._record(
            ctx, text, train, Outcome.accepted(), reasoning=notes, change=change, components=child
        )
        self._merge_due = True

    def _leaks(
        self,
        ctx: StrategyContext,
        text: str,
        after: EvalSnapshot,
        notes: str,
        change: float,
        components: dict[str, str],
    ) -> bool:
        """True, and recorded as rejected, when strict leakage screening refuses ``text``.

        Checked before the Pareto-set (val) evaluation: a candidate copying held-out text is
        never scored on val, so it costs no val calls and its val scores never reach the front.
        """
        reason = ctx.capability(SCREENING).leakage_screen(text)
        if reason is None:
            return False
        self._reject(ctx, text, after, notes, change, components, reason)
        return True

    def _try_merge(
        self,
        ctx: StrategyContext,
        pool: list[Example],
        a: Candidate,
        b: Candidate,
        merged: dict[str, str],
        changed: list[str],
    ) -> None:
        self._merges_tried.add((a.id, b.id))
        spec = _spec(ctx)
        batch = self._batch(ctx)
        snap_a = ctx.evaluate(spec.render(a.components), batch)
        snap_b = ctx.evaluate(spec.render(b.components), batch)
        text = spec.render(merged)
        after = ctx.evaluate(text, batch)
        notes = f"merge of candidates {a.id} and {b.id} (components: {', '.join(changed)})"
        better = max(snap_a, snap_b, key=lambda snap: snap.mean_score)
        best = better.mean_score
        reason = ctx.capability(SCREENING).format_screen(after, better)
        if after.mean_score < best:
            reason = f"merge scored {after.mean_score:.3f} < {best:.3f}"
        if reason is not None:
            self._reject(ctx, text, after, notes, after.mean_score - best, merged, reason)
            return
        if self._leaks(ctx, text, after, notes, after.mean_score - best, merged):
            return
        full = ctx.evaluate(text, pool, label="val")
        cand = Candidate(
            len(self._cands),
            merged,
            (a.id, b.id),
            tuple(changed),
            "merge",
            ctx.iteration + 1,  # the iteration recorded next
            (best, after.mean_score),
        )
        self._add(cand, full)
        self._record(
            ctx,
            text,
            after if len(ctx.val) else full,
            Outcome.accepted(),
            reasoning=notes,
            change=after.mean_score - best,
            components=merged,
        )

    def _reject(
        self,
        ctx: StrategyContext,
        text: str,
        after: EvalSnapshot,
        notes: str,
        change: float,
        components: dict[str, str],
        reason: str,
    ) -> None:
        """Record a candidate refused before its val evaluation (gate, merge or leakage)."""
        outcome = Outcome.rejected(reason)
        self._record(
            ctx, text, after, outcome, reasoning=notes, change=change, components=components
        )


@hookimpl
def register_strategies(register: StrategyRegistrar) -> None:
    register(GepaStrategy)


def _spec(ctx: StrategyContext) -> PromptSpec:
    """The prompt as named components (the components capability)."""
    return ctx.capability(COMPONENTS).prompt_spec
