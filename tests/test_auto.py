"""``auto`` with a reasoning model: evidence-driven choices, phases, forwarded settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from conftest import KEYWORD, make_rows, responder
from pydantic import BaseModel, ConfigDict
from test_gepa_plan import three_calls

from reflex import OptimizationResult, PromptOptimizer
from reflex.api import StrategyContext
from reflex.hookspecs import hookimpl
from reflex.plugins import register_plugin
from reflex.testing import FakeModel, FakeRequest

START = "Classify the sentiment."


def events(result: OptimizationResult, kind: str) -> list[dict[str, Any]]:
    lines = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["type"] == kind]


def builder(run_dir: Path, **options: Any) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows(40))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("auto", **options)
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(run_dir)
    )


def test_auto_forwards_settings_and_records_phases(tmp_path: Path) -> None:
    FakeModel(responder).install()
    result = (
        builder(
            tmp_path,
            axes=["structural", "iterative"],
            structural={"variants_per_round": 2, "freeform": False},
        )
        .configure(batch_size=4, seed=3, max_iterations=6, early_stopping_patience=1)
        .run(START)
    )
    phases = [p["phase"] for p in result.phase_history]
    assert phases[0] == "iterative" and "structural" in phases
    for phase in result.phase_history:
        assert {"start_score", "end_score", "split", "iterations", "stop"} <= set(phase)
        assert phase["split"] == "val" and phase["end_score"] >= phase["start_score"]
    it = result.phase_history[0]
    assert it["end_score"] > it["start_score"] and result.best_prompt.endswith(KEYWORD)
    rounds = events(result, "structural_round")
    assert rounds and all(len(r["scores"]) <= 2 for r in rounds)  # options forwarded
    train = [e for e in events(result, "evaluation") if e["label"].startswith("train:it")]
    assert train and {e["examples"] for e in train} == {4}  # batch size forwarded
    config = json.loads(Path(str(result.run_dir), "config.json").read_text())
    assert config["seed"] == 3


def test_early_stopping_ends_a_phase_not_the_run(tmp_path: Path) -> None:
    def never_better(request: FakeRequest) -> str:
        if request.model == "fake/reasoner":
            n = len(request.messages)
            return f"<edit>e{n}</edit><prompt>{START} Variant {n}.</prompt>"
        return responder(request)

    FakeModel(never_better).install()
    result = (
        builder(tmp_path, axes=["iterative", "structural"])
        .configure(max_iterations=8, early_stopping_patience=1)
        .run(START)
    )
    phases = [p["phase"] for p in result.phase_history]
    assert phases == ["iterative", "structural"]
    assert result.phase_history[0]["stop"].endswith("(early stopping)")
    assert all(p["end_score"] == p["start_score"] for p in result.phase_history)


class EchoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    suffix: str = " Be concise."


class EchoStrategy:
    name: ClassVar[str] = "echo_suffix"
    Options: ClassVar[type[BaseModel]] = EchoOptions
    requires_reasoning_model: ClassVar[bool] = False
    auto_eligible: ClassVar[bool] = True

    def __init__(self, options: BaseModel) -> None:
        assert isinstance(options, EchoOptions)
        self.options = options

    def optimize(self, ctx: StrategyContext) -> None:
        prompt = ctx.best_prompt + self.options.suffix
        ctx.record_iteration(prompt, ctx.evaluate(prompt, list(ctx.train)[:2]))


class EchoPlugin:
    @hookimpl
    def register_strategies(self, register: Any) -> None:
        register(EchoStrategy)


def test_registered_auto_eligible_strategy_gets_its_options(tmp_path: Path) -> None:
    FakeModel(responder).install()
    register_plugin(EchoPlugin(), name="echo-plugin")
    result = (
        builder(tmp_path, axes=["echo_suffix"], extra_options={"echo_suffix": {"suffix": " X."}})
        .configure(max_iterations=2)
        .run(START)
    )
    assert [p["phase"] for p in result.phase_history] == ["echo_suffix"]
    assert result.iterations[0].system_prompt == START + " X."


def test_evidence_counts_a_pipelines_model_calls_per_iteration(tmp_path: Path) -> None:
    FakeModel(responder).install()

    def per_iteration(run: PromptOptimizer) -> int:
        result = run.configure(max_iterations=1, batch_size=4).run(START)
        return int(result.phase_history[0]["evidence"]["calls_per_iteration"])

    plain = per_iteration(builder(tmp_path / "plain", axes=["iterative"]))
    piped = builder(tmp_path / "piped", axes=["iterative"]).set_pipeline(three_calls)
    assert plain == 4 + 8  # batch_size + 8 val rows, one call each
    assert per_iteration(piped) == 3 * plain


def test_unknown_axis_is_refused(tmp_path: Path) -> None:
    import pytest

    from reflex import ConfigurationError

    FakeModel(responder).install()
    with pytest.raises(ConfigurationError, match="unknown axis"):
        builder(tmp_path, axes=["iterativ"]).run(START)


def test_affordable_passes_count_every_task_model() -> None:
    from types import SimpleNamespace

    from reflex_strategies.auto import affordable_passes

    def ctx(remaining: int | None, models: int, val: int = 40, race: bool = False) -> Any:
        settings = SimpleNamespace(batch_size=8, models=("m",) * models, race=race)
        budget = SimpleNamespace(remaining_calls=remaining, calls_per_row=1.0)
        return SimpleNamespace(val=[None] * val, settings=settings, budget=budget)

    assert affordable_passes(ctx(100, 1)) == 2  # 40 calls per val pass
    assert affordable_passes(ctx(100, 2)) == 1  # 80: both models answer every val row
    assert affordable_passes(ctx(None, 1)) is None  # no call budget
    assert affordable_passes(ctx(100, 1, val=0)) is None  # no val split
    assert affordable_passes(ctx(100, 1, race=True)) == 5  # raced: half a pass (20) each


def test_answers_outside_the_label_set_count_as_format_evidence(tmp_path: Path) -> None:
    def near_misses(request: FakeRequest) -> str:
        if request.model == "fake/reasoner":
            return responder(request)
        label = responder(request).split()[-1].rstrip(".")  # "positive" or "negative"
        return f"{label}s"  # "positives": a near miss of a label, never the label itself

    FakeModel(near_misses).install()
    result = (
        builder(tmp_path, axes=["iterative"])
        .configure(batch_size=4, max_iterations=1, allow_degenerate_seed=True)
        .run(START)
    )
    found = result.phase_history[0]["evidence"]
    assert found["off_label"] == 1.0  # every probe row answered outside {positive, negative}
    assert found["format_failures"] == 1.0 and found["content_failures"] == 0.0
