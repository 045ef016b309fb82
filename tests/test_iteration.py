"""An iteration's record and the checkpoint after it (reflex.run.iteration)."""

from __future__ import annotations

import time

from reflex.models.usage import Usage
from reflex.result import EvalSnapshot, IterationRecord
from reflex.run.iteration import Measured, checkpoint_data, new_record


def test_the_record_carries_the_scores_the_verdict_and_the_evidence() -> None:
    train = EvalSnapshot("p", "train", 0.5, {"exact_match": 0.5})
    val = EvalSnapshot("p", "val", 0.75, {"exact_match": 0.75})
    evidence = {"rule": "any", "passed": True}
    measured = Measured("p", train, val, "why", True, 0.1, None, True, evidence)
    total = Usage(calls=3, prompt_tokens=20, completion_tokens=10, cost=0.5)
    record = new_record(measured, iteration=2, phase="x", total=total, started=time.monotonic())
    assert (record.iteration, record.score, record.val_score) == (2, 0.5, 0.75)
    assert record.accepted and record.is_best and record.evidence == evidence
    assert (record.calls, record.tokens, record.cost, record.phase) == (3, 30, 0.5, "x")
    failed = new_record(
        Measured("p", None, None, "", True, None, "boom", False),
        iteration=3,
        phase="x",
        total=total,
        started=time.monotonic(),
    )
    assert not failed.accepted and failed.evidence is None and failed.score is None


def test_the_checkpoint_counts_the_iterations() -> None:
    record = IterationRecord(1, 0.5, 0.5, {}, "p")
    data = checkpoint_data(
        iterations=[record],
        phase="p",
        phase_history=[],
        best_prompt="b",
        best_val=0.5,
        since_best=0,
        stop_reason="",
        stop=None,
        state={},
        ledger={},
        metric_calls=7,
        elapsed=1.23456,
    )
    assert data["iteration"] == 1 and data["iterations"][0]["system_prompt"] == "p"
    assert data["elapsed_s"] == 1.235 and data["metric_calls"] == 7
