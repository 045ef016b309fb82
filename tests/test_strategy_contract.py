"""The strategy contract at work: each opt-in capability through its key (the core and the
protocols themselves: tests/test_types.py), the iteration ``Outcome`` (and the deprecated
keywords it replaces), typed evaluation labels and the lineage on the iteration records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import BETTER, make_rows, responder
from pydantic import BaseModel, ConfigDict

from reflex import PromptOptimizer
from reflex.api import (
    COMPONENTS,
    JUDGING,
    PHASES,
    REASONING,
    SCREENING,
    STRATEGIES,
    Capability,
    ConfigurationError,
    EvalLabel,
    EvalSnapshot,
    IterationRecord,
    Outcome,
    StrategyContext,
)
from reflex.api.tracking import iteration_metrics
from reflex.hookspecs import hookimpl
from reflex.testing import FakeModel, RecordingCallback

START = "Classify the sentiment."


def builder(run_dir: Path, strategy: str, **options: Any) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows(24))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_strategy(strategy, **options)
        .configure(max_iterations=8)
        .set_run_dir(run_dir)
    )


# --- the core and the capabilities --------------------------------------------------------------


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")
    style: str = "outcome"


SEEN: dict[str, Any] = {}


class _AsksForAll:
    """Asks for every capability and uses each once."""

    name: ClassVar[str] = "asks_for_all"
    Options: ClassVar[type[BaseModel]] = _Options
    requires_reasoning_model: ClassVar[bool] = True
    derives_from_data: ClassVar[bool] = False
    auto_eligible: ClassVar[bool] = False

    def __init__(self, options: BaseModel) -> None:
        self.options = options

    def optimize(self, ctx: StrategyContext) -> None:
        phases = ctx.capability(PHASES)
        SEEN["phase_before"] = phases.phase
        phases.begin_phase("second", max_iterations=1)
        phases.end_phase(note="opened")
        SEEN["phase_after"] = phases.phase
        SEEN["answer"] = ctx.capability(REASONING).reason("Propose a prompt.")
        ctx.capability(REASONING).fail_proposal("contract test", "unusable on purpose")
        SEEN["spec"] = ctx.capability(COMPONENTS).prompt_spec.render()
        SEEN["screen"] = ctx.capability(SCREENING).leakage_screen(BETTER)
        judging = ctx.capability(JUDGING)
        SEEN["judging"] = (judging.judge, judging.label_free)
        with pytest.raises(ConfigurationError, match="needs a judge metric"):
            judging.judge_pairs([])
        strategies = ctx.capability(STRATEGIES)
        SEEN["registered"] = set(strategies.strategies())
        SEEN["built"] = strategies.build_strategy("instructions", {}).name
        with pytest.raises(ConfigurationError, match="no capability 'nope': ask for one of"):
            ctx.capability(Capability("nope"))
        ctx.record_iteration(BETTER, ctx.evaluate(BETTER, list(ctx.train)[:2]))
        SEEN["stop"] = (ctx.should_stop, phases.stop)


class _Plugin:
    @hookimpl
    def register_strategies(self, register: Any) -> None:
        register(_AsksForAll)
        register(_Verdicts)


def test_each_capability_works_through_its_key(register_plugin: Any, tmp_path: Path) -> None:
    FakeModel(responder).install()
    register_plugin(_Plugin(), name="contract")
    SEEN.clear()
    result = builder(tmp_path, "asks_for_all").run(START)
    assert SEEN["phase_before"] == "asks_for_all" and SEEN["phase_after"] == "second"
    assert BETTER in SEEN["answer"]  # the fake reasoner's proposal
    assert SEEN["spec"] == START and SEEN["screen"] is None
    assert SEEN["judging"] == (None, False)
    assert {"iterative", "gepa", "asks_for_all"} <= SEEN["registered"]
    assert SEEN["built"] == "instructions"
    assert SEEN["stop"] == (True, None)  # the phase's cap: should_stop, and no stop reason
    assert result.phase_history[-1]["phase"] == "second"
    assert result.phase_history[-1]["note"] == "opened"
    assert [p["purpose"] for p in result.failed_proposals] == ["contract test"]
    assert result.best_prompt == BETTER and result.iterations[0].phase == "second"


# --- the Outcome --------------------------------------------------------------------------------

LEGACY: dict[str, dict[str, Any]] = {
    "accepted": {"accepted": True},
    "declined": {"accepted": False},
    "rejected": {"accepted": False, "rejected": "screened out"},
    "failed": {"accepted": False, "failed": "no usable answer"},
}
OUTCOMES = {
    "accepted": Outcome.accepted(),
    "declined": Outcome.declined(),
    "rejected": Outcome.rejected("screened out"),
    "failed": Outcome.failed("no usable answer"),
}


class _Verdicts:
    """Records one iteration per verdict, as an Outcome or with the deprecated keywords."""

    name: ClassVar[str] = "verdicts"
    Options: ClassVar[type[BaseModel]] = _Options
    requires_reasoning_model: ClassVar[bool] = False
    derives_from_data: ClassVar[bool] = False
    auto_eligible: ClassVar[bool] = False

    def __init__(self, options: BaseModel) -> None:
        assert isinstance(options, _Options)
        self.style = options.style

    def optimize(self, ctx: StrategyContext) -> None:
        rows = list(ctx.train)[:3]
        for n, kind in enumerate(["declined", "rejected", "failed", "accepted", "val decides"]):
            prompt = f"{START} Variant {n}." if kind != "accepted" else BETTER
            snap = None if kind == "failed" else ctx.evaluate(prompt, rows)
            if kind == "val decides":
                ctx.record_iteration(prompt, snap, reasoning=kind)
            elif self.style == "legacy":
                ctx.record_iteration(prompt, snap, reasoning=kind, **LEGACY[kind])
            else:
                ctx.record_iteration(prompt, snap, OUTCOMES[kind], reasoning=kind)


def _run(tmp_path: Path, style: str) -> tuple[list[IterationRecord], list[dict[str, Any]]]:
    recording = RecordingCallback()
    run_dir = tmp_path / style
    builder(run_dir, "verdicts", style=style).run(START, callbacks=[recording])
    records = [args[0] for hook, args in recording.calls if hook == "on_iteration"]
    [events] = run_dir.rglob("events.jsonl")
    logged = [
        e for e in map(json.loads, events.read_text().splitlines()) if e["type"] == "iteration"
    ]
    return [r for r in records if isinstance(r, IterationRecord)], logged


def _timeless(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in ("elapsed_s", "ts", "time")}


def test_outcome_reaches_the_record_and_trackers_as_the_old_keywords_did(
    register_plugin: Any, tmp_path: Path
) -> None:
    FakeModel(responder).install()
    register_plugin(_Plugin(), name="contract")
    new, new_events = _run(tmp_path, "outcome")
    with pytest.warns(DeprecationWarning, match="record_iteration.*deprecated") as caught:
        old, old_events = _run(tmp_path, "legacy")
    assert {Path(w.filename).name for w in caught} == {Path(__file__).name}  # the caller's line
    assert len(new) == len(old) == 5
    assert [_timeless(r.to_dict()) for r in new] == [_timeless(r.to_dict()) for r in old]
    assert [iteration_metrics(r) for r in new] == [iteration_metrics(r) for r in old]
    assert [_timeless(e) for e in new_events] == [_timeless(e) for e in old_events]
    declined, rejected, failed, accepted, by_val = new
    assert declined.outcome == Outcome.declined() and declined.val_score is not None
    assert rejected.outcome == Outcome.rejected("screened out") and rejected.val_score is None
    assert failed.outcome == Outcome.failed("no usable answer") and failed.val_score is None
    assert accepted.outcome == Outcome.accepted() and accepted.is_best
    assert by_val.outcome == Outcome.declined() and not by_val.is_best  # not better on val


def test_outcome_invariants() -> None:
    with pytest.raises(ValueError, match="takes a reason"):
        Outcome("rejected")
    with pytest.raises(ValueError, match="takes no reason"):
        Outcome("accepted", "why")


# --- typed evaluation labels and lineage --------------------------------------------------------


def test_evaluation_labels_are_typed_and_keep_their_recorded_text(
    register_plugin: Any, tmp_path: Path
) -> None:
    class Labels(RecordingCallback):
        def __init__(self) -> None:
            super().__init__()
            self.labels: list[EvalLabel] = []

        def on_evaluation_end(self, label: EvalLabel, snapshot: EvalSnapshot) -> None:
            assert label.split == snapshot.split
            self.labels.append(label)

    FakeModel(responder).install()
    register_plugin(_Plugin(), name="contract")
    seen = Labels()
    builder(tmp_path, "verdicts").run(START, callbacks=[seen])
    texts = [str(label) for label in seen.labels]
    assert texts[:3] == ["train:preflight", "test:baseline", "val:baseline"]
    assert texts[-1] == "test:final" and "train:it1" in texts and "val:it1" in texts
    assert [EvalLabel.parse(text) for text in texts] == seen.labels
    assert EvalLabel.at("val", 3) == EvalLabel("val", "iteration", 3)
    assert EvalLabel.parse("nonsense") is None
    with pytest.warns(DeprecationWarning, match="comparing an EvalLabel to a string"):
        assert EvalLabel("val", "baseline") == "val:baseline"  # what callbacks got before
    assert {EvalLabel("val", "baseline"): 1}[EvalLabel.parse("val:baseline")] == 1
    [events] = tmp_path.rglob("events.jsonl")
    logged = [json.loads(line) for line in events.read_text().splitlines()]
    assert [e["label"] for e in logged if e["type"] == "evaluation"] == texts


def test_gepa_lineage_rides_on_the_iteration_records(tmp_path: Path) -> None:
    FakeModel(responder).install()
    result = builder(tmp_path, "gepa").configure(max_iterations=3).run(START)
    assert result.lineage == [e for r in result.iterations for e in r.lineage]
    assert result.iterations[0].lineage[0]["kind"] == "seed"
    child = next(e for e in result.lineage if e["kind"] == "reflection")
    record = result.iterations[child["iteration"] - 1]
    assert record.lineage[-1] == child and record.system_prompt == BETTER
    [checkpoint] = tmp_path.rglob("checkpoint.json")
    assert "lineage" not in json.loads(checkpoint.read_text())["state"]
