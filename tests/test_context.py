"""RunContext (reflex/run/context.py), the engine's side of the strategy contract: a strategy
evaluates train and val rows only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import BETTER, make_rows, responder
from pydantic import BaseModel, ConfigDict

from reflex import ConfigurationError, PromptOptimizer
from reflex.api import StrategyContext
from reflex.hookspecs import hookimpl
from reflex.testing import FakeModel

START = "Classify the sentiment."


class _PeekOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Peek:
    """A strategy that tries to score its candidate on the test split."""

    name: ClassVar[str] = "peek"
    Options: ClassVar[type[BaseModel]] = _PeekOptions
    requires_reasoning_model: ClassVar[bool] = False
    derives_from_data: ClassVar[bool] = False

    def __init__(self, options: BaseModel) -> None:
        self.options = options

    def optimize(self, ctx: StrategyContext) -> None:
        seen = {e.id for e in ctx.train} | {e.id for e in ctx.val}
        rows = [e for e in make_rows_examples() if e.id not in seen]  # the test rows
        ctx.evaluate(ctx.best_prompt, rows, label="val")


def make_rows_examples() -> list[Any]:
    from reflex.data.dataset import load_dataset

    return list(load_dataset(make_rows()))


class _Plugin:
    @hookimpl
    def register_strategies(self, register: Any) -> None:
        register(_Peek)


def test_a_strategy_cannot_evaluate_test_rows(tmp_path: Path, register_plugin: Any) -> None:
    FakeModel(responder).install()
    register_plugin(_Plugin(), name="peek")
    opt = (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("peek")
        .set_run_dir(tmp_path)
    )
    with pytest.raises(ConfigurationError, match="row\\(s\\) of the test split"):
        opt.run(START)


class _Unscored(_Peek):
    """Records two candidates without scoring them on train itself."""

    name: ClassVar[str] = "unscored"

    def optimize(self, ctx: StrategyContext) -> None:
        for prompt in (BETTER, BETTER + " Answer with the label."):
            ctx.record_iteration(prompt, None)


class _UnscoredPlugin:
    @hookimpl
    def register_strategies(self, register: Any) -> None:
        register(_Unscored)


def _unscored_run(tmp_path: Path, **budget: Any) -> tuple[list[float | None], list[list[str]]]:
    """Each iteration's train score, and the train rows each was measured on."""
    opt = (
        PromptOptimizer()
        .set_dataset(make_rows(20))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("unscored")
        .configure(batch_size=3)
        .set_run_dir(tmp_path)
    )
    result = (opt.set_budget(**budget) if budget else opt).run(START)
    assert result.run_dir is not None
    log = Path(result.run_dir) / "evaluations.jsonl"
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    train = [[r["example_id"] for r in rows if r["label"] == f"train:it{i}"] for i in (1, 2)]
    return [record.score for record in result.iterations], train


def test_a_candidate_not_scored_on_train_is_measured_on_one_seeded_minibatch(
    tmp_path: Path, register_plugin: Any
) -> None:
    FakeModel(responder).install()
    register_plugin(_UnscoredPlugin(), name="unscored")
    scores, train = _unscored_run(tmp_path / "plain")
    assert all(score is not None for score in scores)
    assert len(train[0]) == 3 and train[0] == train[1]  # batch_size rows, the same each time
    # Under a call budget every call goes to the search: no train minibatch, no train score.
    scores, train = _unscored_run(tmp_path / "budget", max_calls=200)
    assert scores == [None, None] and train == [[], []]
