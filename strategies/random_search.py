"""``random``: paraphrases of the starting prompt, no score feedback (the control baseline).

The reasoning model is asked for ``variants_per_round`` paraphrases of the *starting* prompt;
it never sees a score, an output or an earlier variant's result. Each variant is one iteration,
measured on val (selection is the engine's best-on-val). Run at the same metric-call budget as
a reflective strategy, it shows what the feedback adds. Stops when two rounds in a row bring
no new variant. Edits the assembled prompt text.

Calls per iteration: ``len(val)`` per task model. Under ``--race`` a round's variants are raced
instead (:mod:`._race`: growing rungs of the val rows, the same rows for each, the clearly worse
dropped early), about half a val pass each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from reflex.api import (
    COMPONENTS,
    BaseStrategy,
    StrategyRegistrar,
    ask,
    hookimpl,
    parse_prompts,
    render,
    system_prompt,
)

from ._common import try_candidate
from ._race import Candidate, race

if TYPE_CHECKING:
    from reflex.api import StrategyContext

__all__ = ["RandomOptions", "RandomStrategy", "register_strategies"]


class RandomOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    variants_per_round: int = Field(default=4, gt=0, description="paraphrases asked for at once")


class RandomStrategy(BaseStrategy[RandomOptions]):
    name: ClassVar[str] = "random"
    Options: ClassVar[type[BaseModel]] = RandomOptions
    requires_reasoning_model: ClassVar[bool] = True

    def optimize(self, ctx: StrategyContext) -> None:
        spec = ctx.capability(COMPONENTS).prompt_spec
        if not spec.is_single:
            ctx.log("edits_assembled_text", strategy=self.name, components=spec.names)
        tried = [ctx.initial_prompt]
        pending: list[str] = []
        rounds = empty = 0
        while not ctx.should_stop:
            if not pending:
                rounds += 1
                pending = self._variants(ctx, tried, rounds)
                tried.extend(pending)
                empty = 0 if pending else empty + 1
                if empty >= 2:
                    ctx.log("random_exhausted", round=rounds)
                    return
                continue
            if ctx.settings.race and len(ctx.val):  # the round's variants raced on val rungs
                note = f"random paraphrase (round {rounds}), chosen without feedback, raced"
                race(ctx, [Candidate(p, reasoning=note) for p in pending])
                pending = []
                continue
            prompt = pending.pop(0)
            try_candidate(
                ctx,
                prompt,
                ctx.initial_prompt,
                batch=[],
                reasoning=f"random paraphrase (round {rounds}), chosen without feedback",
            )

    def _variants(self, ctx: StrategyContext, tried: list[str], rounds: int) -> list[str]:
        count = self.options.variants_per_round
        messages = [
            {"role": "system", "content": system_prompt(ctx, "random.system")},
            {
                "role": "user",
                "content": render(
                    "random.paraphrase",
                    ctx.settings.reasoning_templates,
                    current=ctx.initial_prompt,
                    count=count,
                    round=rounds,
                ),
            },
        ]
        found, _ = ask(
            ctx, "random: paraphrase", messages, lambda a: parse_prompts(a, exclude=tried)
        )
        # Shuffle with the run's rng: the order the model lists them in is not a ranking.
        variants = (found or [])[:count]
        ctx.rng.shuffle(variants)
        return variants


@hookimpl
def register_strategies(register: StrategyRegistrar) -> None:
    register(RandomStrategy)
