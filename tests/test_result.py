"""The records of reflex/result.py: a snapshot, an iteration and a result read back from their
JSON as written, older records included; a result's derived figures."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

import pytest
from conftest import responder
from test_stop_reasons import START, builder

from reflex import OptimizationResult
from reflex.result import (
    EvalSnapshot,
    IterationRecord,
    Outcome,
    RunEnd,
    Sample,
    StopReason,
)
from reflex.testing import FakeModel


def test_result_json_keeps_old_keys_and_adds_the_enums(tmp_path: Path) -> None:
    FakeModel(responder).install()
    result = builder(tmp_path).configure(score_threshold=0.9).run(START)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["stop"] == "score_threshold" and data["end_state"] == "completed"
    assert data["stop_reason"] == result.stop_reason and data["completed"] is True
    assert data["schema_version"] == 1
    again = OptimizationResult.from_dict(data)
    assert again.stop is StopReason.SCORE_THRESHOLD and again.end_state is RunEnd.COMPLETED
    # A record written before the enums existed still loads; it has no enum to give.
    old = {k: v for k, v in data.items() if k not in ("stop", "end_state")}
    legacy = OptimizationResult.from_dict(old)
    assert legacy.stop is None and legacy.end_state is None
    assert RunEnd.of_record(old) is RunEnd.COMPLETED


def _snapshot(split: str, scores: list[float | None]) -> EvalSnapshot:
    samples = tuple(
        Sample(example_id=f"r{i}", model="fake/m", output="x", score=score)
        for i, score in enumerate(scores)
    )
    kept = [s for s in scores if s is not None]
    return EvalSnapshot("p", split, sum(kept) / len(kept), {"exact": 0.5}, samples, n_errors=1)


def test_a_snapshot_and_an_iteration_read_back_from_their_json() -> None:
    snap = _snapshot("val:it1", [1.0, None, 0.0])
    again = EvalSnapshot.from_dict(json.loads(json.dumps(snap.to_dict())))
    assert again == snap and again.per_example() == {"r0@fake/m": 1.0, "r2@fake/m": 0.0}
    record = IterationRecord(2, 0.5, 0.75, {"exact": 0.5}, "p", lineage=[{"id": 1}])
    data = {**json.loads(json.dumps(record.to_dict())), "a_later_field": 1}
    assert IterationRecord.from_dict(data) == record  # fields it does not know are skipped


def test_a_snapshot_s_dict_is_asdict_s_with_the_samples_as_a_list() -> None:
    """to_dict builds each sample's dict without asdict: the same keys in the same order,
    equal values and no shared mutable value, whatever the sample holds."""
    samples = (
        Sample("r0", "m", "out", 1.0, {"a": 1.0}, {"a": "ok"}, {"o": 0.5}, None, True, ["b"]),
        Sample("r1", "m", "", None, error="boom", trace=[{"name": "s", "input": {"x": [1]}}]),
        Sample("r2", "m", "x", 0.0, latency_ms=3.5, prompt_tokens=7, completion_tokens=2),
        Sample("r3", "m", "x", 0.0, trace=[("a", 1)]),  # type: ignore[list-item]  # a tuple
    )
    snap = EvalSnapshot("p", "test", 0.5, {"a": 0.5}, samples, n_skipped={"a": 1})
    reference = asdict(snap)
    reference["samples"] = [asdict(s) for s in samples]
    data = snap.to_dict()
    assert json.dumps(data) == json.dumps(reference) and data == reference
    assert type(data["samples"]) is list
    for mine, sample in zip(data["samples"], samples, strict=True):
        assert mine["scores"] is not sample.scores and mine["failed_metrics"] is not (
            sample.failed_metrics
        )
    assert data["samples"][1]["trace"][0]["input"] is not samples[1].trace[0]["input"]  # type: ignore[index]


def test_an_iteration_s_outcome_is_read_from_its_fields() -> None:
    base = IterationRecord(1, None, None, {}, "p")
    assert base.outcome == Outcome.declined()
    assert replace(base, accepted=True).outcome == Outcome.accepted()
    assert replace(base, rejected="leaks").outcome == Outcome.rejected("leaks")
    assert replace(base, failed="boom", rejected="x").outcome == Outcome.failed("boom")


def test_a_result_s_improvement_is_undefined_from_a_zero_baseline() -> None:
    result = OptimizationResult(
        "p", None, baseline=_snapshot("test", [0.0]), final=_snapshot("test", [1.0])
    )
    assert result.improvement == 1.0 and result.improvement_pct is None
    assert "baseline test score is 0" in str(result.improvement_pct_note)
    with pytest.raises(ValueError, match="schema_version 0 is not"):
        OptimizationResult.from_dict({**result.to_dict(), "schema_version": 0})
