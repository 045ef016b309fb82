"""Lifecycle callbacks and the dispatcher that keeps a broken callback from breaking a run.

Order within a run: ``on_run_start`` -> ``on_baseline`` -> ``on_iteration`` (per iteration) ->
``on_final`` -> ``on_run_end``; on any exception ``on_run_error`` instead of the rest.
The ``on_evaluation_*`` methods report progress of each evaluation (for progress bars).

A callback is any object with any subset of these methods: :class:`Callback` is a convenience
base with a no-op for each and the documented signatures, not a requirement. The tracker-neutral
helpers for tracker adapters are in :mod:`reflex.callbacks.tracking`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, TypeAlias

from reflex.redact import scrub

if TYPE_CHECKING:
    from reflex.config import RunConfig
    from reflex.result import EvalSnapshot, IterationRecord, OptimizationResult

__all__ = ["AnyCallback", "Callback", "CallbackDispatcher", "FailureListener"]

logger = logging.getLogger(__name__)

# Any object with any subset of Callback's ``on_*`` methods; subclassing Callback is optional.
AnyCallback: TypeAlias = object
# (callback class name, hook, the exception it raised)
FailureListener = Callable[[str, str, Exception], None]
Hook = Literal[
    "on_run_start",
    "on_baseline",
    "on_iteration",
    "on_final",
    "on_run_end",
    "on_run_error",
    "on_evaluation_start",
    "on_evaluation_advance",
    "on_evaluation_end",
]


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


class CallbackDispatcher:
    """One typed method per hook: each calls, in order, every callback that has that hook.

    A callback that raises, in the hook or already when its method is looked up, is logged as
    a warning naming it and the hook (and reported to ``on_failure``); the others still hear
    the hook and the run goes on. Only ``Exception`` is caught: Ctrl-C still stops the run.
    """

    def __init__(
        self, callbacks: Sequence[AnyCallback], on_failure: FailureListener | None = None
    ) -> None:
        self.callbacks = list(callbacks)
        self._on_failure = on_failure

    def run_start(self, config: RunConfig, initial_prompt: str) -> None:
        self._call("on_run_start", config, initial_prompt)

    def baseline(self, snapshot: EvalSnapshot) -> None:
        self._call("on_baseline", snapshot)

    def iteration(self, record: IterationRecord) -> None:
        self._call("on_iteration", record)

    def final(self, snapshot: EvalSnapshot) -> None:
        self._call("on_final", snapshot)

    def run_end(self, result: OptimizationResult) -> None:
        self._call("on_run_end", result)

    def run_error(self, error: BaseException, partial: OptimizationResult | None) -> None:
        self._call("on_run_error", error, partial)

    def evaluation_start(self, label: str, total: int) -> None:
        self._call("on_evaluation_start", label, total)

    def evaluation_advance(self, n: int) -> None:
        self._call("on_evaluation_advance", n)

    def evaluation_end(self, label: str, snapshot: EvalSnapshot) -> None:
        self._call("on_evaluation_end", label, snapshot)

    def _call(self, hook: Hook, *args: object) -> None:
        for callback in self.callbacks:
            try:
                # Inside the guard: a callback may lack the hook, or its lookup may raise.
                method = getattr(callback, hook, None)
                if method is not None:
                    method(*args)
            except Exception as exc:  # noqa: BLE001 - a tracker must never break a run
                self._failed(type(callback).__name__, hook, exc)

    def _failed(self, name: str, hook: Hook, exc: Exception) -> None:
        error = f"{type(exc).__name__}: {scrub(str(exc))}"  # it may echo a secret it was given
        logger.warning("callback %s.%s failed: %s", name, hook, error)
        if self._on_failure is not None:
            self._on_failure(name, hook, exc)
