"""Lifecycle callbacks and the dispatcher that keeps a broken callback from breaking a run.

Order within a run: ``on_run_start`` -> ``on_baseline`` -> ``on_iteration`` (per iteration) ->
``on_final`` -> ``on_run_end``; on any exception ``on_run_error`` instead of the rest.
The ``on_evaluation_*`` methods report progress of each evaluation (for progress bars).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from reflex.redact import scrub

if TYPE_CHECKING:
    from reflex.config import RunConfig
    from reflex.result import EvalSnapshot, IterationRecord, OptimizationResult

__all__ = ["Callback", "CallbackDispatcher"]

logger = logging.getLogger(__name__)


class Callback:
    """Base class with a no-op for every hook; override the ones you need."""

    def on_run_start(self, config: RunConfig, initial_prompt: str) -> None:
        """The run is configured and about to measure the baseline."""

    def on_baseline(self, snapshot: EvalSnapshot) -> None:
        """The initial prompt was measured on the test split."""

    def on_iteration(self, record: IterationRecord) -> None:
        """A strategy iteration finished (train and val scores measured)."""

    def on_final(self, snapshot: EvalSnapshot) -> None:
        """The best-on-val prompt was measured on the test split."""

    def on_run_end(self, result: OptimizationResult) -> None:
        """The run finished (completed, or stopped by a budget with a partial result)."""

    def on_run_error(self, error: BaseException, partial: OptimizationResult | None) -> None:
        """The run failed; close whatever the callback opened. The error is re-raised after."""

    def on_evaluation_start(self, label: str, total: int) -> None:
        """An evaluation of ``total`` calls starts (``label`` names the split and purpose)."""

    def on_evaluation_advance(self, n: int) -> None:
        """``n`` more calls of the current evaluation finished."""

    def on_evaluation_end(self, label: str, snapshot: EvalSnapshot) -> None:
        """The current evaluation finished."""


FailureListener = Callable[[str, str, BaseException], None]


class CallbackDispatcher:
    """Calls every callback in order; a callback that raises is logged as a warning and skipped."""

    def __init__(
        self, callbacks: Sequence[Callback], on_failure: FailureListener | None = None
    ) -> None:
        self.callbacks = list(callbacks)
        self._on_failure = on_failure

    def emit(self, hook: str, *args: Any) -> None:
        for callback in self.callbacks:
            method = getattr(callback, hook)
            try:
                method(*args)
            except Exception as exc:  # noqa: BLE001 - a tracker must never break a run
                name = type(callback).__name__
                error = f"{type(exc).__name__}: {scrub(str(exc))}"  # it may echo a secret
                logger.warning("callback %s.%s failed: %s", name, hook, error)
                if self._on_failure is not None:
                    self._on_failure(name, hook, exc)
