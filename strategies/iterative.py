"""``iterative``: diagnose the worst train examples, propose a revision, keep what helps.

Each iteration samples a train minibatch, scores the current prompt on it, shows the reasoning
model the worst rows plus the rewrite log (each past edit paired with the score change *that
edit* caused on its own minibatch), and scores the revision on the same rows. The revision is
adopted only if it scores strictly higher (and, where answers have a format to keep, breaks it
no more often: the format guard), and only an adopted revision is measured on val
(``val_gate``; off: every revision is): a revision no better than the current prompt on rows
both were just scored on is not worth a val evaluation. An unusable answer is retried once; a
second failure records the iteration as failed. A minibatch the current prompt already gets
fully right is recorded as rejected without a reasoning call. Its prompts are the
``iterative.*`` templates in ``reflex.judging.reasoning`` (overridable by name).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from reflex.api import (
    SCREENING,
    BaseStrategy,
    EvalSnapshot,
    Outcome,
    Proposal,
    Sample,
    StrategyRegistrar,
    ask,
    hookimpl,
    parse_proposal,
    render,
    system_prompt,
)

from ._rows import sample_row

if TYPE_CHECKING:
    from reflex.api import StrategyContext

__all__ = ["IterativeOptions", "IterativeStrategy", "register_strategies"]


class IterativeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    worst_k: int = Field(default=4, gt=0, description="failing examples shown per iteration")
    show_reference: bool = Field(default=True, description="show expected outputs to the reasoner")
    max_chars: int = Field(default=600, gt=20, description="truncate inputs/outputs shown")
    val_gate: bool = Field(
        default=True,
        description="measure a revision on val only if it beat the current prompt on its minibatch",
    )


class _Edit(TypedDict):
    """One entry of the rewrite log: an edit and the minibatch score change it caused."""

    iteration: int
    edit: str
    change: float
    accepted: bool
    prompt: str


class IterativeStrategy(BaseStrategy[IterativeOptions]):
    name: ClassVar[str] = "iterative"
    Options: ClassVar[type[BaseModel]] = IterativeOptions
    requires_reasoning_model: ClassVar[bool] = True

    def optimize(self, ctx: StrategyContext) -> None:
        current = str(ctx.state.get("current", ctx.best_prompt))
        log: list[_Edit] = list(ctx.state.get("rewrite_log", []))
        train = list(ctx.train)
        while not ctx.should_stop:
            batch = ctx.rng.sample(train, min(ctx.settings.batch_size, len(train)))
            before = ctx.evaluate(current, batch)
            if all(s.score == 1.0 for s in before.samples):
                # Nothing to diagnose on this minibatch: don't pay the reasoning model for it.
                perfect = Outcome.rejected("current prompt is perfect on this minibatch")
                ctx.record_iteration(current, before, perfect)
                continue
            proposal, reasoning, error = self._propose(ctx, current, before, log)
            if proposal is None:
                ctx.record_iteration(current, None, Outcome.failed(error), reasoning=reasoning)
                continue
            after = ctx.evaluate(proposal.prompt, batch)
            change = after.mean_score - before.mean_score
            broken = ctx.capability(SCREENING).format_screen(after, before)
            accepted = change > 0 and broken is None
            log.append(
                {
                    "iteration": ctx.iteration + 1,
                    "edit": proposal.edit or "(unnamed)",
                    "change": round(change, 4),
                    "accepted": accepted,
                    "prompt": proposal.prompt,
                }
            )
            if accepted:
                outcome = Outcome.accepted()
            elif broken is not None:  # more answers break the format: never worth val
                outcome = Outcome.rejected(broken)
            elif self.options.val_gate:  # not worth a val evaluation
                outcome = Outcome.rejected("no better than the current prompt on its minibatch")
            else:
                outcome = Outcome.declined()
            record = ctx.record_iteration(
                proposal.prompt, after, outcome, reasoning=reasoning, change=change
            )
            if accepted and record.rejected is None:  # never build on a rejected (leaking) text
                current = proposal.prompt
            ctx.state.update(current=current, rewrite_log=log)

    def _propose(
        self, ctx: StrategyContext, current: str, snapshot: EvalSnapshot, log: list[_Edit]
    ) -> tuple[Proposal | None, str, str]:
        messages = [
            {"role": "system", "content": system_prompt(ctx, "iterative.system")},
            {"role": "user", "content": self._brief(ctx, current, snapshot, log)},
        ]
        tried = [entry.get("prompt", "") for entry in log]

        def parse(answer: str) -> Proposal:
            return parse_proposal(answer, current=current, forbidden=tried)

        proposal, error = ask(ctx, "iterative: revise the prompt", messages, parse)
        if proposal is None:
            return None, "", error
        return proposal, proposal.reasoning, ""

    def _brief(
        self, ctx: StrategyContext, current: str, snapshot: EvalSnapshot, log: list[_Edit]
    ) -> str:
        worst = sorted(snapshot.samples, key=lambda s: s.score if s.score is not None else -1)
        rows = [self._row(ctx, sample) for sample in worst[: self.options.worst_k]]
        history = (
            "\n".join(
                f"- iteration {e['iteration']}: {e['edit']} -> change "
                f"{e['change']:+.3f} ({'kept' if e['accepted'] else 'reverted'})"
                for e in log[-10:]
            )
            or "- none yet"
        )
        return render(
            "iterative.brief",
            ctx.settings.reasoning_templates,
            current=current,
            score=f"{snapshot.mean_score:.3f}",
            rows="\n\n".join(rows),
            history=history,
        )

    def _row(self, ctx: StrategyContext, sample: Sample) -> str:
        example = ctx.train.by_id(sample.example_id)
        opts = self.options
        return sample_row(
            example,
            sample,
            opts.max_chars,
            reference=opts.show_reference,
            error=False,
            feedback_field=ctx.settings.feedback_field,
        )


@hookimpl
def register_strategies(register: StrategyRegistrar) -> None:
    register(IterativeStrategy)
