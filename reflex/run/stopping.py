"""When a run stops: max iterations, the score threshold, early stopping, a phase's cap.

One small state machine the strategy context consults before and after each iteration, so the
rules live in one place: the threshold and patience are checked after a record, max iterations
and a phase's cap before the next one; early stopping ends only the current phase when a new
phase starts (``StopReason.per_phase``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reflex.config import DEFAULT_ITERATIONS
from reflex.result import IterationRecord, StopReason

__all__ = ["RACED_PASS", "StopSignals", "Stopping", "iteration_limit"]


#: What one raced candidate is planned to cost, in val passes (``--race``): a quarter when it is
#: dropped at the first rung, half at the second, one pass when it survives
#: (``reflex_strategies._race``, whose rungs stop at the budget whatever this plans).
RACED_PASS = 0.5


def iteration_limit(
    max_iterations: int | None,
    max_calls: int | None,
    *,
    fixed_calls: int,
    val_pass: int,
    raced: bool = False,
    per_candidate: int = 1,
) -> int:
    """``max_iterations`` when set; else as many val passes as the search budget pays for
    (``raced``: as many raced candidates, each planned at :data:`RACED_PASS` of a pass).

    ``fixed_calls`` is what the run pays besides its candidates (preflight, the test baseline,
    the val baseline and the final test reserve); ``val_pass`` is one candidate's val
    measurement. Never fewer than DEFAULT_ITERATIONS candidates: a small budget still ends the
    run itself. ``per_candidate``: the iterations one candidate records (``mipro``: a round's
    trials and full evaluations; its ``val_pass`` is then the round's calls).
    """
    if max_iterations is not None:
        return max_iterations
    if max_calls is None or val_pass <= 0:
        return DEFAULT_ITERATIONS * per_candidate
    cost = max(1, math.ceil(val_pass * RACED_PASS)) if raced else val_pass
    return max(DEFAULT_ITERATIONS, (max_calls - fixed_calls) // cost) * per_candidate


@dataclass
class Stopping:
    """The stop state of one run; ``reason`` is None while the run goes on."""

    max_iterations: int
    threshold: float | None
    patience: int | None
    reason: StopReason | None = None
    text: str = ""
    since_best: int = 0
    phase_end: int | None = None

    def should_stop(self, iteration: int) -> bool:
        """True when the run (or the current phase, when it is capped) must not go on."""
        if self.text:
            return True
        if self.phase_end is not None and iteration >= self.phase_end:
            return True  # the phase's share is used up; the run goes on (no reason)
        if iteration >= self.max_iterations:
            self.stop(StopReason.MAX_ITERATIONS, f"reached max iterations ({self.max_iterations})")
        return bool(self.text)

    def stop(self, reason: StopReason, message: str) -> None:
        self.reason, self.text = reason, message

    def set_text(self, message: str) -> None:
        """A strategy that sets the text itself ends the run on its own terms ("" goes on)."""
        self.reason = StopReason.STRATEGY_FINISHED if message else None
        self.text = message

    def begin_phase(self, iteration: int, cap: int | None, reset_patience: bool) -> None:
        """A new phase: its own cap, and (by default) a fresh early-stopping count."""
        self.phase_end = None if cap is None else iteration + cap
        if reset_patience:
            self.since_best = 0
            if self.reason is not None and self.reason.per_phase:
                self.set_text("")

    def recorded(self, is_best: bool, best_val: float | None) -> None:
        """After an iteration: count it against patience and check the threshold."""
        self.since_best = 0 if is_best else self.since_best + 1
        if self.threshold is not None and best_val is not None and best_val >= self.threshold:
            self.stop(StopReason.SCORE_THRESHOLD, f"reached score threshold {self.threshold}")
        if self.patience is not None and self.since_best >= self.patience:
            self.stop(
                StopReason.EARLY_STOPPING,
                f"no val improvement in {self.patience} iterations (early stopping)",
            )


class StopSignals:
    """The stop signals of the run context (``should_stop``, ``stop``, ``stop_reason``), read
    from its :class:`Stopping` and the iterations it recorded, and its phases (the ``PHASES``
    capability: ``begin_phase``, ``end_phase``, ``phase`` and its ``phase_history``)."""

    _stopping: Stopping
    iterations: list[IterationRecord]
    phase: str
    phase_history: list[dict[str, Any]]

    if TYPE_CHECKING:

        def log(self, kind: str, **data: Any) -> None: ...  # the run context's events

    @property
    def iteration(self) -> int:
        """Number of iterations recorded so far."""
        return len(self.iterations)

    @property
    def should_stop(self) -> bool:
        return self._stopping.should_stop(self.iteration)

    @property
    def stop(self) -> StopReason | None:
        """Why the run stops, as the enum the result carries (None while it goes on)."""
        return self._stopping.reason

    def stop_with(self, reason: StopReason, message: str) -> None:
        """Stop the run for ``reason``; ``message`` is the ``stop_reason`` people read."""
        self._stopping.stop(reason, message)

    @property
    def stop_reason(self) -> str:
        """Why the run stops, in words ("" while it goes on); ``stop`` is the same as an enum."""
        return self._stopping.text

    @stop_reason.setter
    def stop_reason(self, message: str) -> None:
        self._stopping.set_text(message)

    def begin_phase(
        self, name: str, *, reset_patience: bool = True, max_iterations: int | None = None
    ) -> None:
        """Start a named phase (e.g. ``auto`` running ``fewshot``); recorded in phase_history.

        By default the early-stopping counter restarts, so one phase's misses do not end the next.
        ``max_iterations`` caps this phase: ``should_stop`` turns True after that many more
        iterations without setting ``stop_reason``, so the caller may start another phase.
        """
        self._stopping.begin_phase(self.iteration, max_iterations, reset_patience)
        self.phase = name
        self.phase_history.append({"phase": name, "start_iteration": self.iteration + 1})
        self.log("phase", phase=name)

    def end_phase(self, **facts: Any) -> None:
        """Add ``facts`` to the current phase's ``phase_history`` entry (e.g. its end score)."""
        if self.phase_history:
            self.phase_history[-1].update(facts)
