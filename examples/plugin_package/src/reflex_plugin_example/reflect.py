"""``reflect``: a reflective strategy written against the public plugin API alone.

Each iteration samples a train minibatch, scores the current prompt on it, shows the reasoning
model the worst rows (input, output, reference, metric feedback) and the edits tried so far with
the score change each caused, and scores the revision on the same rows. A revision is adopted
only when it scores strictly higher there, and only an adopted revision is measured on val (a
revision no better on rows both were just scored on is not worth a val evaluation). An
unusable answer is retried once by :func:`reflex.api.ask`; a second failure records the
iteration as failed. Its state (current prompt and edit log) lives in ``ctx.state``, so a
resumed run continues where it stopped. Everything comes from :mod:`reflex.api`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from reflex.api import BaseStrategy, EvalSnapshot, Outcome, Proposal, ask, parse_proposal

if TYPE_CHECKING:
    from reflex.api import Sample, StrategyContext

__all__ = ["ReflectOptions", "ReflectStrategy"]

SYSTEM = (
    "You improve the system prompt of a language model. You see the prompt, the rows it got "
    "wrong (input, the model's output, the expected output, the metric's feedback) and the "
    "edits tried before with the score change each caused. Diagnose the failure shared by the "
    "rows, then write one revised prompt that fixes it without breaking what works. Answer as "
    "<diagnosis>...</diagnosis> <edit>a few words naming the change</edit> "
    "<prompt>the whole revised prompt</prompt>."
)


class ReflectOptions(BaseModel):
    """Options of ``reflect`` (``--strategy-option worst_k=3`` on the CLI)."""

    model_config = ConfigDict(extra="forbid")

    worst_k: int = Field(default=4, gt=0, description="failing rows shown per iteration")
    max_chars: int = Field(default=500, gt=20, description="each shown field is cut to this")
    history: int = Field(default=8, ge=0, description="past edits shown to the reasoner")


class ReflectStrategy(BaseStrategy[ReflectOptions]):
    """Diagnose the worst minibatch rows, propose a revision, keep it only if it helps."""

    name: ClassVar[str] = "reflect"
    Options: ClassVar[type[BaseModel]] = ReflectOptions
    requires_reasoning_model: ClassVar[bool] = True
    auto_eligible: ClassVar[bool] = True  # `auto` may run it as one of its reasoning phases

    def optimize(self, ctx: StrategyContext) -> None:
        current = str(ctx.state.get("current", ctx.best_prompt))
        edits: list[dict[str, str | float]] = list(ctx.state.get("edits", []))
        train = list(ctx.train)
        while not ctx.should_stop and train:
            batch = ctx.rng.sample(train, min(ctx.settings.batch_size, len(train)))
            before = ctx.evaluate(current, batch)
            if all(s.score == 1.0 for s in before.samples):
                ctx.record_iteration(current, before, Outcome.rejected("already perfect"))
                continue
            proposal, error = self._propose(ctx, current, before, edits)
            if proposal is None:
                ctx.record_iteration(current, None, Outcome.failed(error))
                continue
            after = ctx.evaluate(proposal.prompt, batch)
            change = after.mean_score - before.mean_score
            better = change > 0  # only then worth a val evaluation
            ctx.record_iteration(
                proposal.prompt,
                after,
                Outcome.accepted() if better else Outcome.rejected("no better on its minibatch"),
                reasoning=proposal.diagnosis,
                change=change,
            )
            edit = proposal.edit or "(unnamed)"
            edits.append({"edit": edit, "change": round(change, 4), "prompt": proposal.prompt})
            current = proposal.prompt if better else current
            ctx.state.update(current=current, edits=edits)

    def _propose(
        self,
        ctx: StrategyContext,
        current: str,
        snapshot: EvalSnapshot,
        edits: list[dict[str, str | float]],
    ) -> tuple[Proposal | None, str]:
        worst = sorted(snapshot.samples, key=lambda s: -1.0 if s.score is None else s.score)
        rows = "\n\n".join(self._row(ctx, s) for s in worst[: self.options.worst_k])
        tried = [str(e["prompt"]) for e in edits]
        shown = edits[-self.options.history :] if self.options.history else []
        log = "\n".join(f"- {e['edit']}: {e['change']:+.3f}" for e in shown)
        user = (
            f"Current prompt:\n{current}\n\nScore on this minibatch: {snapshot.mean_score:.3f}"
            f"\n\nWorst rows:\n{rows}\n\nEdits tried so far:\n{log or '- none yet'}"
        )
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]

        def parse(answer: str) -> Proposal:
            return parse_proposal(answer, current=current, forbidden=tried)

        return ask(ctx, "reflect: revise the prompt", messages, parse)

    def _row(self, ctx: StrategyContext, sample: Sample) -> str:
        example, cut = ctx.train.by_id(sample.example_id), self.options.max_chars
        score = "error" if sample.score is None else f"{sample.score:.2f}"
        return (
            f"input: {example.input[:cut]}\noutput: {sample.output[:cut]}\n"
            f"expected: {(example.ideal or '(none)')[:cut]}\nscore: {score}"
            + "".join(
                f"\nfeedback ({name}): {text[:cut]}" for name, text in sample.feedback.items()
            )
        )
