"""An example aevyra-reflex plugin: the ``suffixes`` and ``reflect`` strategies and the
``max_words`` metric.

Declared in pyproject.toml under ``[project.entry-points.reflex]``; aevyra-reflex imports this
module and calls the ``@hookimpl`` functions below, exactly as it does for its built-ins. It
imports nothing from aevyra-reflex but :mod:`reflex.api`, the plugin API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from reflex.api import BaseStrategy, Example, Score, hookimpl

from .reflect import ReflectOptions, ReflectStrategy

if TYPE_CHECKING:
    from reflex.api import MetricRegistrar, StrategyContext, StrategyRegistrar

__all__ = [
    "MaxWords",
    "ReflectOptions",
    "ReflectStrategy",
    "SuffixesOptions",
    "SuffixesStrategy",
    "register_metrics",
    "register_strategies",
]


class SuffixesOptions(BaseModel):
    """Options of ``suffixes`` (``--strategy-option suffixes='["Be brief."]'`` on the CLI)."""

    model_config = ConfigDict(extra="forbid")

    suffixes: list[str] = Field(
        default_factory=lambda: [
            "Answer with only the answer, nothing else.",
            "Answer in as few words as possible.",
        ],
        min_length=1,
    )


class SuffixesStrategy(BaseStrategy[SuffixesOptions]):
    """Tries the initial prompt with each suffix appended; one iteration per suffix.

    Each candidate is screened on a train minibatch, then ``ctx.record_iteration`` measures it
    on val and keeps the best-on-val prompt. It never calls a model itself.
    """

    name: ClassVar[str] = "suffixes"
    Options: ClassVar[type[BaseModel]] = SuffixesOptions

    def optimize(self, ctx: StrategyContext) -> None:
        train = list(ctx.train)
        batch = ctx.rng.sample(train, min(ctx.settings.batch_size, len(train)))
        for suffix in self.options.suffixes:
            if ctx.should_stop:
                return
            candidate = f"{ctx.initial_prompt.rstrip()}\n{suffix}"
            snapshot = ctx.evaluate(candidate, batch)
            ctx.record_iteration(candidate, snapshot, reasoning=f"append {suffix!r}")


class MaxWords:
    """1.0 when the output has at most ``limit`` words, else 0.0 with feedback saying so."""

    name = "max_words"
    requires_reference = False

    def __init__(self, limit: int = 3) -> None:
        if limit < 1:
            raise ValueError(f"max_words limit must be at least 1, got {limit!r}")
        self.limit = limit

    def score(self, output: str, example: Example) -> Score:
        words = len(output.split())
        if words <= self.limit:
            return Score(1.0)
        return Score(0.0, feedback=f"answer has {words} words; at most {self.limit} wanted")


@hookimpl
def register_strategies(register: StrategyRegistrar) -> None:
    register(SuffixesStrategy)
    register(ReflectStrategy)


@hookimpl
def register_metrics(register: MetricRegistrar) -> None:
    register("max_words", MaxWords)
