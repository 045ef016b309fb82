"""``structural``: try new layouts of the best prompt (same content), keep one that scores higher.

Each round (one iteration):

1. a seeded train minibatch of ``batch_size`` rows; the incumbent is scored on it;
2. up to ``variants_per_round`` layout transforms from ``reflex_strategies._layout`` (sections
   reordered, markdown headers, XML tags, flat minimal text, role/task/format split, constraint
   emphasis, decomposition into steps, input-anchored), untried ones first (then least tried),
   plus one free-form restructure written by the reasoning model when one is configured and
   ``freeform`` is on (template ``structural.freeform``);
3. every variant is scored on the *same* minibatch; the best one is the round's winner;
4. the winner is recorded like any other iteration: when it does not beat the incumbent on the
   minibatch it is recorded as rejected (no val calls); otherwise it is measured on val and
   adopted as the new incumbent exactly when it becomes the best prompt on val.

Variants identical to a prompt already scored are skipped. A free-form answer that is unusable
twice is recorded in the round's reasoning (or as a failed iteration when it was the round's
only candidate). Model calls per round: ``batch_size`` x (1 + variants), plus ``len(val)``
when the winner beats the incumbent. Deterministic given the seed (``ctx.rng`` only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from reflex.api import (
    PHASES,
    BaseStrategy,
    EvalSnapshot,
    Example,
    Outcome,
    Proposal,
    StrategyRegistrar,
    ask,
    hookimpl,
    parse_proposal,
    render,
    system_prompt,
)

from ._layout import TRANSFORMS, apply_transform

if TYPE_CHECKING:
    from reflex.api import StrategyContext

__all__ = ["StructuralOptions", "StructuralStrategy", "register_strategies"]


class StructuralOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    transforms: list[str] = Field(
        default_factory=lambda: list(TRANSFORMS),
        min_length=1,
        description="layout transforms to try, in this order when untried",
    )
    variants_per_round: int = Field(default=3, gt=0, description="transforms scored per round")
    freeform: bool = Field(
        default=True, description="add one reasoning-model restructure per round (when configured)"
    )

    @field_validator("transforms")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        unknown = [name for name in value if name not in TRANSFORMS]
        if unknown:
            raise ValueError(f"unknown transform(s) {unknown}; known: {', '.join(TRANSFORMS)}")
        return list(dict.fromkeys(value))


Variant = tuple[str, str]  # (layout name, prompt)


class StructuralStrategy(BaseStrategy[StructuralOptions]):
    name: ClassVar[str] = "structural"
    Options: ClassVar[type[BaseModel]] = StructuralOptions
    requires_reasoning_model: ClassVar[bool] = False
    auto_eligible: ClassVar[bool] = True

    def __init__(self, options: StructuralOptions) -> None:
        super().__init__(options)
        self.tried: dict[str, int] = {}
        self.seen: set[str] = set()

    def optimize(self, ctx: StrategyContext) -> None:
        incumbent = ctx.best_prompt
        self.seen.add(incumbent.strip())
        log: list[tuple[str, float]] = []  # layouts tried on this incumbent and their change
        train = list(ctx.train)
        while not ctx.should_stop and train:
            batch = ctx.rng.sample(train, min(ctx.settings.batch_size, len(train)))
            base = ctx.evaluate(incumbent, batch)
            variants = self._transforms(incumbent)
            note = ""
            if self._use_reasoning(ctx):
                freeform, note = self._freeform(ctx, incumbent, base, log)
                variants += [("freeform", freeform)] if freeform else []
            if not variants:
                if note:
                    ctx.record_iteration(incumbent, None, Outcome.failed(note), reasoning=note)
                    continue
                phase = ctx.capability(PHASES).phase
                ctx.log("no_candidates", phase=phase, reason="every layout was tried")
                return
            winner = self._round(ctx, incumbent, base, batch, variants, log, note)
            if winner is not None:
                incumbent, log = winner, []

    def _use_reasoning(self, ctx: StrategyContext) -> bool:
        return self.options.freeform and bool(ctx.settings.reasoning_model)

    def _transforms(self, incumbent: str) -> list[Variant]:
        """Up to ``variants_per_round`` new layouts, least-tried transform first."""
        order = {name: i for i, name in enumerate(self.options.transforms)}
        ranked = sorted(order, key=lambda name: (self.tried.get(name, 0), order[name]))
        out: list[Variant] = []
        for name in ranked:
            if len(out) >= self.options.variants_per_round:
                break
            prompt = apply_transform(name, incumbent)
            if prompt and prompt.strip() not in self.seen:
                out.append((name, prompt))
        for name, prompt in out:
            self.tried[name] = self.tried.get(name, 0) + 1
            self.seen.add(prompt.strip())
        return out

    def _freeform(
        self, ctx: StrategyContext, incumbent: str, base: EvalSnapshot, log: list[tuple[str, float]]
    ) -> tuple[str | None, str]:
        tried = "\n".join(f"- {name}: {change:+.3f}" for name, change in log) or "- none yet"
        user = render(
            "structural.freeform",
            ctx.settings.reasoning_templates,
            current=incumbent,
            score=f"{base.mean_score:.3f}",
            tried=tried,
        )
        messages = [
            {"role": "system", "content": system_prompt(ctx, "structural.system")},
            {"role": "user", "content": user},
        ]
        seen = sorted(self.seen)

        def parse(answer: str) -> Proposal:
            return parse_proposal(answer, current=incumbent, forbidden=seen)

        proposal, error = ask(ctx, "structural: free-form restructure", messages, parse)
        if proposal is None:
            return None, f"free-form restructure failed: {error}"
        self.seen.add(proposal.prompt.strip())
        return proposal.prompt, f"free-form: {proposal.edit or proposal.reasoning}".strip()

    def _round(
        self,
        ctx: StrategyContext,
        incumbent: str,
        base: EvalSnapshot,
        batch: list[Example],
        variants: list[Variant],
        log: list[tuple[str, float]],
        note: str,
    ) -> str | None:
        """Score every variant on ``batch``; record the best; return it when adopted."""
        scored = [(name, prompt, ctx.evaluate(prompt, batch)) for name, prompt in variants]
        name, prompt, snap = max(scored, key=lambda item: item[2].mean_score)  # first on ties
        change = snap.mean_score - base.mean_score
        log.extend((n, s.mean_score - base.mean_score) for n, _, s in scored)
        lines = [f"structural round on {len(batch)} rows: incumbent {base.mean_score:.3f}"]
        lines += [f"- {n}: {s.mean_score:.3f}" for n, _, s in scored]
        lines += [note] if note else []
        lines.append(f"winner: {name} ({change:+.3f})")
        reasoning = "\n".join(lines)
        ctx.log(
            "structural_round",
            scores={n: s.mean_score for n, _, s in scored},
            incumbent=base.mean_score,
            winner=name,
        )
        if change <= 0:
            reason = "no layout beat the incumbent on the round's batch"
            ctx.record_iteration(
                prompt, snap, Outcome.rejected(reason), reasoning=reasoning, change=change
            )
            return None
        record = ctx.record_iteration(prompt, snap, reasoning=reasoning, change=change)
        return prompt if record.is_best else None


@hookimpl
def register_strategies(register: StrategyRegistrar) -> None:
    register(StructuralStrategy)
