"""An example aevyra-reflex plugin: the ``suffixes`` strategy and the ``max_words`` metric.

Declared in pyproject.toml under ``[project.entry-points.reflex]``; aevyra-reflex imports this
module and calls the ``@hookimpl`` functions below, exactly as it does for its built-ins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from reflex import Example, Score, hookimpl
from reflex.run.context import StrategyContext
from reflex.types import Metric, Strategy

__all__ = [
    "MaxWords",
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


class SuffixesStrategy:
    """Tries the initial prompt with each suffix appended; one iteration per suffix.

    Each candidate is screened on a train minibatch, then ``ctx.record_iteration`` measures it
    on val and keeps the best-on-val prompt. It never calls a model itself.
    """

    name: ClassVar[str] = "suffixes"
    Options: ClassVar[type[BaseModel]] = SuffixesOptions
    requires_reasoning_model: ClassVar[bool] = False

    def __init__(self, options: BaseModel) -> None:
        if not isinstance(options, SuffixesOptions):
            raise TypeError(f"expected SuffixesOptions, got {type(options).__name__}")
        self.options = options

    def optimize(self, ctx: StrategyContext) -> None:
        batch = ctx.rng.sample(list(ctx.train), min(ctx.batch_size, len(ctx.train)))
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
def register_strategies(register: Callable[[type[Strategy]], None]) -> None:
    register(SuffixesStrategy)


@hookimpl
def register_metrics(register: Callable[[str, Callable[..., Metric]], None]) -> None:
    register("max_words", MaxWords)
