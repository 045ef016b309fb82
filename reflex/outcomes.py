"""Verdicts: how an iteration ended (``Outcome``), which of two outputs a judge preferred
(``PairOutcome``), why a run's loop stopped (``StopReason``) and how the run ended (``RunEnd``).

A base module (it imports nothing from reflex): the records in :mod:`reflex.result` hold these,
and the contracts in :mod:`reflex.types` take them. The enum values are what the result JSON's
``stop`` and ``end_state`` hold; ``reflex.result`` re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Literal

__all__ = ["Outcome", "PairOutcome", "RunEnd", "StopReason"]


@dataclass(frozen=True)
class PairOutcome:
    """One row's verdict: ``share`` is first's share of the row (1 win, 0 loss, 0.5 tie).

    ``orders`` holds the judge's preference with first shown as A, then with first shown as B
    (each mapped back to "first" / "second" / "tie"; None when unusable). ``error`` is set when
    an order stayed unusable after its retry; the row then counts as a tie.
    """

    share: float
    orders: tuple[str | None, str | None]
    error: str | None = None

    @property
    def position_bias(self) -> bool:
        """The two orders disagreed on a winner: the judge followed position, not content."""
        a, b = self.orders
        return a is not None and b is not None and "tie" not in (a, b) and a != b


class StopReason(str, Enum):
    """Why the strategy's loop ended (``OptimizationResult.stop``); ``stop_reason`` says it in
    words. The values are what the result JSON's ``stop`` holds."""

    BUDGET = "budget"  # a budget ran out (``end_state`` says whether the run still finished)
    EARLY_STOPPING = "early_stopping"  # no val improvement in early_stopping_patience iterations
    ERROR = "error"  # an exception ended the run before the loop did
    INTERRUPTED = "interrupted"  # Ctrl-C
    MAX_ITERATIONS = "max_iterations"
    SCORE_THRESHOLD = "score_threshold"  # the best val score reached score_threshold
    STRATEGY_FINISHED = "strategy_finished"  # the strategy returned on its own (nothing left)

    @property
    def per_phase(self) -> bool:
        """True when a new phase (``begin_phase``, PHASES) clears this stop: early stopping ends a
        phase of a phased strategy (e.g. ``auto``), not its run."""
        return self is StopReason.EARLY_STOPPING

    @property
    def converged(self) -> bool:
        """True when the run stopped on its own: it reached the threshold or stopped improving."""
        return self in (StopReason.SCORE_THRESHOLD, StopReason.EARLY_STOPPING)


class RunEnd(str, Enum):
    """How a run ended (``OptimizationResult.end_state``); the result JSON's ``end_state``.

    Three end with an honest final test score (``measured``): ``SUCCEEDED`` (the strategy's loop
    ended on its own and at least one candidate was evaluated; ``completed=True``),
    ``PAUSED_BUDGET`` (a budget stopped the loop; the final was measured inside the reserve kept
    for it) and ``NO_CANDIDATE`` (no candidate could be proposed or evaluated: every iteration
    failed; the final is the initial prompt's). The others have no final: ``BUDGET_STOPPED`` a
    budget ran out outside the loop (e.g. during the baseline), ``INTERRUPTED`` Ctrl-C,
    ``FAILED`` any other exception. ``COMPLETED`` is the older name of ``SUCCEEDED`` (JSON value
    ``"completed"``, kept so that readers of older records go on working).
    """

    SUCCEEDED = "completed"  # the value records have always held for a finished run
    PAUSED_BUDGET = "paused_budget"
    NO_CANDIDATE = "no_candidate"
    BUDGET_STOPPED = "budget_stopped"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    COMPLETED = "completed"  # the older name of SUCCEEDED (an alias: the same member)

    @property
    def measured(self) -> bool:
        """True when the run ended with its final test score measured."""
        return self in (RunEnd.SUCCEEDED, RunEnd.PAUSED_BUDGET, RunEnd.NO_CANDIDATE)

    @classmethod
    def of_record(cls, data: Mapping[str, object]) -> RunEnd:
        """The end state of a result JSON, including records written before ``end_state``."""
        if data.get("end_state"):
            return cls(str(data["end_state"]))
        if data.get("completed"):
            return cls.SUCCEEDED
        # Older records carry the interruption only in their text; new code reads end_state.
        interrupted = "KeyboardInterrupt" in str(data.get("stop_reason"))
        return cls.INTERRUPTED if interrupted else cls.FAILED


@dataclass(frozen=True)
class Outcome:
    """How one iteration ended: told to ``ctx.record_iteration``; ``IterationRecord.outcome``.

    - ``Outcome.accepted()``: the strategy adopts the candidate; it is measured on val.
    - ``Outcome.declined()``: measured on val, not adopted (the engine may still select it).
    - ``Outcome.rejected(reason)``: turned down before val (screened out, gated); val is not paid.
    - ``Outcome.failed(reason)``: no candidate (an unusable answer, an error); val is not paid.

    Invariants: ``reason`` is a text exactly for ``rejected`` and ``failed`` (else None). No
    outcome means "val decides": accepted exactly when it becomes the new best on val. The
    engine may still reject a candidate (``--strict-leakage``, a guard metric that regressed).
    """

    kind: Literal["accepted", "declined", "rejected", "failed"]
    reason: str | None = None

    def __post_init__(self) -> None:
        needs_reason = self.kind in ("rejected", "failed")
        if needs_reason != (self.reason is not None):
            raise ValueError(f"Outcome {self.kind!r} takes {'a' if needs_reason else 'no'} reason")

    @classmethod
    def accepted(cls) -> Outcome:
        return cls("accepted")

    @classmethod
    def declined(cls) -> Outcome:
        return cls("declined")

    @classmethod
    def rejected(cls, reason: str) -> Outcome:
        return cls("rejected", reason)

    @classmethod
    def failed(cls, reason: str) -> Outcome:
        return cls("failed", reason)
