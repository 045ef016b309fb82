"""The run lifecycle on the fake model: order, selection, budgets, failures, caching."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from conftest import BETTER, make_rows, responder

from reflex import (
    BudgetExhausted,
    Callback,
    ConfigurationError,
    DegenerateSeedError,
    OptimizationResult,
    PromptOptimizer,
    ProviderError,
)
from reflex.testing import FakeModel, FakeRequest, RecordingCallback

START = "Classify the sentiment."


def builder(run_dir: Path, rows: list[dict[str, Any]] | None = None) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(rows or make_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(run_dir)
    )


def test_lifecycle_order_and_selection(fake_model: FakeModel, tmp_path: Path) -> None:
    rec = RecordingCallback()
    result = builder(tmp_path).run(START, callbacks=[rec])
    hooks = rec.hooks
    assert hooks[:2] == ["on_run_start", "on_baseline"]
    assert hooks[-2:] == ["on_final", "on_run_end"]
    assert set(hooks[2:-2]) == {"on_iteration"} and len(hooks[2:-2]) == len(result.iterations)
    assert result.baseline is not None and result.final is not None
    assert result.baseline.split == "test" and result.final.split == "test"
    assert result.best_prompt == BETTER == result.final.system_prompt
    assert result.final.mean_score == 1.0 > result.baseline.mean_score
    assert result.improvement == pytest.approx(1.0 - result.baseline.mean_score)
    assert result.p_value is not None and result.significance is not None
    assert result.completed


def test_run_dir_holds_config_disjoint_splits_and_result(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    result = builder(tmp_path).run(START)
    run = Path(str(result.run_dir))
    splits = json.loads((run / "splits.json").read_text())
    train, val, test = (set(splits[k]) for k in ("train", "val", "test"))
    assert not (train & val or train & test or val & test)
    assert len(train | val | test) == 30
    saved = json.loads((run / "result.json").read_text())
    assert saved["best_prompt"] == result.best_prompt == (run / "prompts/best.txt").read_text()
    assert saved["final"]["system_prompt"] == saved["best_prompt"]
    config = json.loads((run / "config.json").read_text())
    assert config["models"] == ["fake/task"]
    events = [json.loads(line)["type"] for line in (run / "events.jsonl").open()]
    assert "evaluation" in events and "iteration" in events


def test_result_round_trips_through_json(fake_model: FakeModel, tmp_path: Path) -> None:
    result = builder(tmp_path).run(START)
    data = json.loads(json.dumps(result.to_dict()))
    again = OptimizationResult.from_dict(data)
    assert again.to_dict() == result.to_dict()
    for key in (
        "best_prompt",
        "best_score",
        "baseline",
        "final",
        "iterations",
        "improvement",
        "improvement_pct",
        "p_value",
        "schema_version",
    ):
        assert key in data
    assert set(data["iterations"][0]) >= {
        "iteration",
        "score",
        "val_score",
        "scores_by_metric",
        "system_prompt",
        "reasoning",
    }


def test_selection_is_on_val_not_train(tmp_path: Path) -> None:
    """A candidate that wins on train but loses on val must not be returned."""
    overfit = "Overfit prompt."

    def answer(request: FakeRequest) -> str:
        if request.model == "fake/reasoner":
            return f"<edit>overfit</edit><prompt>{overfit}</prompt>"
        ideal = {r["input"]: r["ideal"] for r in make_rows()}[request.user]
        index = int(request.user.split()[1].rstrip(":"))
        if request.system == overfit:  # perfect on train rows, wrong on the rest
            return ideal if index in train_rows else "wrong"
        return ideal if index % 2 == 0 else "wrong"

    train_rows: set[int] = set()
    FakeModel(answer).install()
    opt = builder(tmp_path).configure(max_iterations=1)
    from reflex.data.splits import split_dataset

    split = split_dataset(opt._dataset, seed=0)  # type: ignore[arg-type]
    train_rows.update(int(e.id[1:]) for e in split.train)
    result = opt.run(START)
    assert result.iterations[0].score is not None and result.iterations[0].score > 0.5
    assert result.best_prompt == START
    assert result.final is not None and result.final.system_prompt == START


def test_second_identical_run_makes_no_task_calls(fake_model: FakeModel, tmp_path: Path) -> None:
    builder(tmp_path).run(START)
    task_calls = len(fake_model.calls_to("fake/task"))
    second = builder(tmp_path).run(START)
    assert len(fake_model.calls_to("fake/task")) == task_calls
    assert second.usage["task"]["calls"] == 0 and second.usage["task"]["cache_hits"] > 0


def test_reasoning_model_required_before_any_call(fake_model: FakeModel, tmp_path: Path) -> None:
    opt = (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake/task")
        .add_metric("exact_match")
        .set_strategy("iterative")  # named: without a strategy the run is auto (reasoning-free)
        .set_run_dir(tmp_path)
    )
    with pytest.raises(ConfigurationError, match="--reasoning-model"):
        opt.run(START)
    assert fake_model.requests == []


def test_degenerate_seed_refused_then_allowed(tmp_path: Path) -> None:
    fake = FakeModel(lambda r: "nonsense" if r.model == "fake/task" else responder(r)).install()
    with pytest.raises(DegenerateSeedError, match="allow-degenerate-seed"):
        builder(tmp_path).run(START)
    assert not fake.calls_to("fake/reasoner")
    result = builder(tmp_path).configure(allow_degenerate_seed=True, max_iterations=1).run(START)
    assert result.baseline is not None and result.baseline.mean_score == 0.0


def test_budget_exhaustion_gives_partial_result_with_final(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    # preflight 10 + baseline 6 + val 6 + reserve 6 for the final; 30 leaves 2 for iterations.
    result = builder(tmp_path).set_budget(max_calls=30).run(START)
    assert result.stop_reason.startswith("budget exhausted")
    assert result.final is not None and result.final.system_prompt == result.best_prompt
    assert result.usage["metric_calls"] <= 30


def test_budget_too_small_for_baseline_raises_with_partial(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    rec = RecordingCallback()
    with pytest.raises(BudgetExhausted) as info:
        builder(tmp_path).set_budget(max_calls=12).run(START, callbacks=[rec])
    assert isinstance(info.value.partial, OptimizationResult)
    assert rec.hooks[-1] == "on_run_error"


def test_reasoning_call_budget(tmp_path: Path) -> None:
    count = iter(range(1, 100))

    def answer(request: FakeRequest) -> str:  # proposals that never help: every round reasons
        if request.model == "fake/reasoner":
            return f"<prompt>{START} v{next(count)}</prompt>"
        return responder(request)

    fake = FakeModel(answer).install()
    result = (
        builder(tmp_path)
        .set_budget(max_reasoning_calls=1)
        .configure(max_iterations=5, early_stopping_patience=None)
        .run(START)
    )
    assert len(fake.calls_to("fake/reasoner")) == 1
    assert "reasoning-call budget" in result.stop_reason


def test_failing_callback_is_a_warning(
    fake_model: FakeModel, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken(Callback):
        def on_iteration(self, record: Any) -> None:
            raise RuntimeError("tracker down")

    rec = RecordingCallback()
    with caplog.at_level(logging.WARNING):
        result = builder(tmp_path).run(START, callbacks=[Broken(), rec])
    assert result.completed and rec.hooks[-1] == "on_run_end"
    assert any("Broken.on_iteration" in r.getMessage() for r in caplog.records)


def test_permanent_provider_error_calls_on_run_error(tmp_path: Path) -> None:
    import litellm

    def fault(request: FakeRequest, n: int) -> BaseException | None:
        if request.model == "fake/reasoner":
            return litellm.AuthenticationError(
                message="bad key", llm_provider="openai", model="reasoner"
            )
        return None

    FakeModel(responder, fault=fault).install()
    rec = RecordingCallback()
    with pytest.raises(ProviderError, match="permanent"):
        builder(tmp_path).run(START, callbacks=[rec])
    assert rec.hooks[-1] == "on_run_error"
    _error, partial = rec.calls[-1][1]
    assert isinstance(partial, OptimizationResult) and partial.baseline is not None


def test_threshold_stops_early(fake_model: FakeModel, tmp_path: Path) -> None:
    result = builder(tmp_path).configure(score_threshold=0.9, max_iterations=5).run(START)
    assert len(result.iterations) == 1 and "threshold" in result.stop_reason


def test_multiple_task_models_pair_by_example_and_model(tmp_path: Path) -> None:
    FakeModel(responder).install()
    result = builder(tmp_path).add_provider("fake", "task2").configure(max_iterations=1).run(START)
    assert result.baseline is not None
    assert {s.model for s in result.baseline.samples} == {"fake/task", "fake/task2"}
    assert result.significance is not None and result.significance["n"] == 12


def test_guard_metric_blocks_a_candidate_that_regresses_it(tmp_path: Path) -> None:
    """The better-scoring candidate is twice as long: a length guard keeps the original."""
    long_prompt = f"{BETTER} Be thorough."

    ideal = {r["input"]: r["ideal"] for r in make_rows()}

    def answer(request: FakeRequest) -> str:
        if request.model == "fake/reasoner":
            return f"<prompt>{long_prompt}</prompt>"
        if request.system == long_prompt:  # always the right label, padded with words
            return f"{ideal[request.user]} ok ok ok"
        index = int(request.user.split()[1].rstrip(":"))
        return ideal[request.user] if index % 3 == 0 else "no idea"

    FakeModel(answer).install()
    opt = (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake", "task")
        .add_metric("contains")
        .add_metric("length", weight=0, max_words=2)
        .add_guard("length", 0.1)
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path)
        .configure(max_iterations=1)
    )
    result = opt.run(START)
    [record] = result.iterations
    assert record.rejected is not None and "guard length" in record.rejected
    assert not record.is_best and result.best_prompt == START
    unguarded = (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake", "task")
        .add_metric("contains")
        .add_metric("length", weight=0, max_words=2)
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path)
        .configure(max_iterations=1)
        .run(START)
    )
    assert unguarded.best_prompt == long_prompt


def test_guard_must_name_a_run_metric(fake_model: FakeModel, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="guard metric"):
        builder(tmp_path).add_guard("length").run(START)
