"""``opro``: optimization by prompting (after OPRO, Yang et al. 2023).

The reasoning model sees a meta-prompt: the prompts tried so far with their scores, sorted
ascending (the best last, where models attend most), and a few task exemplars. Each round it
writes ``proposals_per_round`` new prompts; each is screened on one fixed, seeded train subset
(``screen_size`` rows), so scores in the history are comparable. A round is one iteration: its
best proposal is measured on val when it beats the incumbent's screen score, otherwise it is
recorded as rejected. Every ``reevaluate_every`` rounds the incumbent is re-scored on the whole
train split, so a lucky subset score does not stay on top. The search stops when a round's
proposals all repeat earlier ones (``opro_converged`` event).

Calls per round: ``proposals_per_round * screen_size`` per task model (repeats are cached),
plus ``len(val)`` when the round's best is promoted, plus ``len(train)`` on re-evaluation
rounds (the first time per incumbent). Edits the assembled prompt text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from reflex.api import (
    COMPONENTS,
    BaseStrategy,
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

if TYPE_CHECKING:
    from reflex.api import StrategyContext

__all__ = ["OproOptions", "OproStrategy", "meta_history", "register_strategies"]


class OproOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    proposals_per_round: int = Field(default=4, gt=0, description="prompts asked for per round")
    screen_size: int = Field(default=8, gt=0, description="fixed train rows each is scored on")
    history_size: int = Field(default=10, gt=0, description="best scored prompts shown")
    exemplars: int = Field(default=3, ge=0, description="task examples shown in the meta-prompt")
    reevaluate_every: int = Field(
        default=3, ge=0, description="re-score the incumbent on all of train every N rounds"
    )
    max_chars: int = Field(default=300, gt=20, description="truncate exemplars shown")


@dataclass
class Scored:
    prompt: str
    score: float


def meta_history(history: list[Scored], size: int) -> str:
    """The ``size`` best entries, ascending by score (ties: earlier first)."""
    order = sorted(enumerate(history), key=lambda p: (p[1].score, -p[0]))
    best = [entry for _, entry in order][-size:]
    return "\n\n".join(f"<prompt>\n{e.prompt}\n</prompt>\nscore: {e.score:.3f}" for e in best)


class OproStrategy(BaseStrategy[OproOptions]):
    name: ClassVar[str] = "opro"
    Options: ClassVar[type[BaseModel]] = OproOptions
    requires_reasoning_model: ClassVar[bool] = True

    def optimize(self, ctx: StrategyContext) -> None:
        opts = self.options
        train = list(ctx.train)
        screen = ctx.rng.sample(train, min(opts.screen_size, len(train)))
        shots = ctx.rng.sample(train, min(opts.exemplars, len(train)))
        spec = ctx.capability(COMPONENTS).prompt_spec
        if not spec.is_single:
            ctx.log("edits_assembled_text", strategy=self.name, components=spec.names)
        incumbent = Scored(ctx.initial_prompt, ctx.evaluate(ctx.initial_prompt, screen).mean_score)
        history = [incumbent]
        rounds = 0
        while not ctx.should_stop:
            rounds += 1
            if opts.reevaluate_every and rounds % opts.reevaluate_every == 0:
                incumbent.score = ctx.evaluate(incumbent.prompt).mean_score
            proposals, error = self._propose(ctx, history, shots)
            if not proposals:
                ctx.log("opro_converged", round=rounds, reason=error)
                return
            best: tuple[Scored, EvalSnapshot] | None = None
            for prompt in proposals:
                snap = ctx.evaluate(prompt, screen)
                history.append(Scored(prompt, snap.mean_score))
                if best is None or snap.mean_score > best[0].score:
                    best = (history[-1], snap)
            assert best is not None
            incumbent = self._record(ctx, best, incumbent, rounds)

    def _record(
        self,
        ctx: StrategyContext,
        best: tuple[Scored, EvalSnapshot],
        incumbent: Scored,
        rounds: int,
    ) -> Scored:
        entry, snap = best
        change = entry.score - incumbent.score
        note = f"opro round {rounds}: best of {self.options.proposals_per_round} proposals"
        if change <= 0:
            reason = f"screen {entry.score:.3f} <= incumbent {incumbent.score:.3f}"
            ctx.record_iteration(
                entry.prompt, snap, Outcome.rejected(reason), reasoning=note, change=change
            )
            return incumbent
        ctx.record_iteration(entry.prompt, snap, Outcome.accepted(), reasoning=note, change=change)
        return entry

    def _propose(
        self, ctx: StrategyContext, history: list[Scored], shots: list[Example]
    ) -> tuple[list[str], str]:
        cut = self.options.max_chars
        exemplars = (
            "\n".join(f"- {e.input[:cut]!r} -> {(e.ideal or '')[:cut]!r}" for e in shots)
            or "- (none)"
        )
        user = render(
            "opro.meta",
            ctx.settings.reasoning_templates,
            history=meta_history(history, self.options.history_size),
            exemplars=exemplars,
            count=self.options.proposals_per_round,
        )
        messages = [
            {"role": "system", "content": system_prompt(ctx, "opro.system")},
            {"role": "user", "content": user},
        ]
        tried = [h.prompt for h in history]
        found, error = ask(
            ctx, "opro: propose prompts", messages, lambda a: parse_prompts(a, exclude=tried)
        )
        return (found or [])[: self.options.proposals_per_round], error


@hookimpl
def register_strategies(register: StrategyRegistrar) -> None:
    register(OproStrategy)
