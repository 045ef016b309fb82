"""An iteration's record as the run context builds it, and the checkpoint written after it.

:func:`new_record` turns what ``RunContext.record_iteration`` measured and decided into an
:class:`~reflex.result.IterationRecord` (scores, verdict, run totals so far, the acceptance
gate's evidence); :func:`checkpoint_data` is the state a resumed run checks its replay against.
Pure functions of their arguments.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reflex.checks.leakage import LeakageFlag
from reflex.models.usage import Usage
from reflex.result import EvalSnapshot, IterationRecord

__all__ = ["Measured", "checkpoint_data", "new_record"]


@dataclass(frozen=True)
class Measured:
    """What one iteration measured and decided, before it becomes a record."""

    prompt: str
    train: EvalSnapshot | None
    val: EvalSnapshot | None
    reasoning: str
    accepted: bool
    change: float | None
    failed: str | None
    is_best: bool
    evidence: dict[str, Any] | None = None
    rejected: str | None = None
    components: Mapping[str, str] | None = None
    leakage: Sequence[LeakageFlag] = ()
    lineage: Sequence[Mapping[str, Any]] = ()
    race: Mapping[str, Any] | None = None


def new_record(
    m: Measured, *, iteration: int, phase: str, total: Usage, started: float
) -> IterationRecord:
    """The record of iteration ``iteration`` (``total``: the run's usage so far)."""
    train, val = m.train, m.val
    return IterationRecord(
        iteration=iteration,
        score=train.mean_score if train else None,
        val_score=val.mean_score if val is not None else None,
        scores_by_metric=dict(train.scores_by_metric) if train else {},
        val_scores_by_metric=dict(val.scores_by_metric) if val is not None else {},
        system_prompt=m.prompt,
        reasoning=m.reasoning,
        accepted=m.accepted and m.failed is None,
        change=m.change,
        failed=m.failed,
        rejected=m.rejected,
        is_best=m.is_best,
        phase=phase,
        calls=total.calls,
        tokens=total.tokens,
        cost=total.cost,
        cost_unknown=total.cost_unknown,
        elapsed_s=round(time.monotonic() - started, 3),
        evidence=m.evidence,
        components=dict(m.components) if m.components else None,
        leakage=[flag.to_dict() for flag in m.leakage],
        lineage=[dict(entry) for entry in m.lineage],
        race=dict(m.race) if m.race is not None else None,
    )


def checkpoint_data(
    *,
    iterations: Sequence[IterationRecord],
    phase: str,
    phase_history: list[dict[str, Any]],
    best_prompt: str,
    best_val: float | None,
    since_best: int,
    stop_reason: str,
    stop: str | None,
    state: dict[str, Any],
    ledger: dict[str, Any],
    metric_calls: int,
    elapsed: float,
) -> dict[str, Any]:
    """The state after the latest iteration (written atomically after each iteration)."""
    return {
        "stage": "iterations",
        "iteration": len(iterations),
        "phase": phase,
        "phase_history": phase_history,
        "best_prompt": best_prompt,
        "best_val": best_val,
        "since_best": since_best,
        "stop_reason": stop_reason,
        "stop": stop,
        "state": state,
        "iterations": [r.to_dict() for r in iterations],
        "ledger": ledger,
        "metric_calls": metric_calls,
        "elapsed_s": round(elapsed, 3),
    }
