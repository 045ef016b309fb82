"""Lifecycle callbacks and the dispatcher that keeps a broken callback from breaking a run.

Order within a run: ``on_run_start`` -> ``on_baseline`` -> ``on_iteration`` (per iteration) ->
``on_final`` -> ``on_run_end``; on any exception ``on_run_error`` instead of the rest.
The ``on_evaluation_*`` methods report progress of each evaluation (for progress bars).

A callback is any object with any subset of these methods: :class:`Callback` is a convenience
base with a no-op for each and the documented signatures, not a requirement. The tracker-neutral
helpers for tracker adapters are in :mod:`reflex.callbacks.tracking`, their guarded base
:class:`GuardedCallback` in :mod:`reflex.callbacks.guarded`.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from reflex.redact import scrub

if TYPE_CHECKING:
    from reflex.config import RunConfig
    from reflex.result import EvalSnapshot, IterationRecord, OptimizationResult

__all__ = [
    "INITIAL_VAL_LABEL",
    "AnyCallback",
    "Callback",
    "CallbackDispatcher",
    "EvalLabel",
    "FailureListener",
    "SummaryListener",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalLabel:
    """What one evaluation measured: the typed form of the labels events.jsonl holds.

    ``split``: "train", "val" or "test". ``kind``: "baseline" (the initial prompt: on test, and
    on val before any candidate), "final" (the best prompt on test), "preflight" (the initial
    prompt on a few train rows before the run) or "iteration" (during iteration ``iteration``,
    1-based; None for the other kinds). ``str(label)`` is the recorded text, ``"val:baseline"``,
    ``"train:it3"``; :meth:`parse` reads it back (None for a text of no known shape).

    Callbacks received that text before this release: for one release a label still equals its
    text (``label == "val:baseline"``), with a DeprecationWarning; compare the fields instead.
    """

    split: str
    kind: str
    iteration: int | None = None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            warnings.warn(
                "comparing an EvalLabel to a string is deprecated and goes in the next release: "
                "compare its split, kind and iteration (or str(label))",
                DeprecationWarning,
                stacklevel=2,
            )
            return str(self) == other
        if not isinstance(other, EvalLabel):
            return NotImplemented
        return (self.split, self.kind, self.iteration) == (other.split, other.kind, other.iteration)

    def __hash__(self) -> int:
        return hash(str(self))  # equal to its text's, as the comparison above

    def __post_init__(self) -> None:
        if (self.kind == "iteration") != (self.iteration is not None):
            raise ValueError(f"EvalLabel {self.kind!r}: an iteration exactly for 'iteration'")

    @classmethod
    def at(cls, split: str, iteration: int) -> EvalLabel:
        """The evaluation of ``split`` during iteration ``iteration``."""
        return cls(split, "iteration", iteration)

    def __str__(self) -> str:
        if self.iteration is not None:
            return f"{self.split}:it{self.iteration}"
        return f"{self.split}:{self.kind}"

    @classmethod
    def parse(cls, text: object) -> EvalLabel | None:
        split, _, kind = str(text).partition(":")
        if not split or not kind:
            return None
        if kind.startswith("it") and kind[2:].isdigit():
            return cls.at(split, int(kind[2:]))
        return cls(split, kind)


INITIAL_VAL_LABEL = EvalLabel("val", "baseline")
"""The initial prompt's evaluation on the val split (``on_evaluation_end``'s label; its text,
``"val:baseline"``, in the ``evaluation`` events of events.jsonl): the best val score before
any candidate beat it."""

# Any object with any subset of Callback's ``on_*`` methods; subclassing Callback is optional.
AnyCallback: TypeAlias = object
# (callback class name, hook, the exception it raised)
FailureListener = Callable[[str, str, Exception], None]
# (callback class name, how many times it failed in the run, failures per hook)
SummaryListener = Callable[[str, int, Mapping[str, int]], None]
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

    def on_evaluation_start(self, label: EvalLabel, total: int) -> None:
        """An evaluation of ``total`` calls starts (``label``: its split, kind and iteration;
        ``str(label)`` is the text events.jsonl records, e.g. ``"val:it3"``)."""

    def on_evaluation_advance(self, n: int) -> None:
        """``n`` more calls of the current evaluation finished."""

    def on_evaluation_end(self, label: EvalLabel, snapshot: EvalSnapshot) -> None:
        """The current evaluation finished."""


class CallbackDispatcher:
    """One typed method per hook: each calls, in order, every callback that has that hook.

    A callback that raises, in the hook or already when its method is looked up, does not stop
    the others from hearing the hook, nor the run. Its first failure is logged as a warning
    naming it, the hook and the error (and reported to ``on_failure``); its later failures are
    only counted, so a callback that raises in every hook costs one warning, not one per call.
    It is never switched off: a plain callback failing in one hook (a progress bar) may still
    do its work in another (``on_run_end``). When the run ends (``run_end``/``run_error``),
    each callback that failed gets one summary warning, "failed N times in hooks ...", also
    reported to ``on_summary``. Only ``Exception`` is caught: Ctrl-C still stops the run.
    """

    def __init__(
        self,
        callbacks: Sequence[AnyCallback],
        on_failure: FailureListener | None = None,
        on_summary: SummaryListener | None = None,
    ) -> None:
        self.callbacks = list(callbacks)
        self._on_failure = on_failure
        self._on_summary = on_summary
        # index of the callback in ``callbacks`` -> failures per hook (in the order first seen)
        self._failures: dict[int, dict[str, int]] = {}
        self._lock = threading.Lock()  # progress hooks may come from the model thread

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
        self._summarize()

    def run_error(self, error: BaseException, partial: OptimizationResult | None) -> None:
        self._call("on_run_error", error, partial)
        self._summarize()

    def evaluation_start(self, label: EvalLabel, total: int) -> None:
        self._call("on_evaluation_start", label, total)

    def evaluation_advance(self, n: int) -> None:
        self._call("on_evaluation_advance", n)

    def evaluation_end(self, label: EvalLabel, snapshot: EvalSnapshot) -> None:
        self._call("on_evaluation_end", label, snapshot)

    def _call(self, hook: Hook, *args: object) -> None:
        for index, callback in enumerate(self.callbacks):
            try:
                # Inside the guard: a callback may lack the hook, or its lookup may raise.
                method = getattr(callback, hook, None)
                if method is not None:
                    method(*args)
            except Exception as exc:  # noqa: BLE001 - a tracker must never break a run
                self._failed(index, type(callback).__name__, hook, exc)

    def _failed(self, index: int, name: str, hook: Hook, exc: Exception) -> None:
        error = f"{type(exc).__name__}: {scrub(str(exc))}"  # it may echo a secret it was given
        with self._lock:
            hooks = self._failures.setdefault(index, {})
            first = not hooks
            hooks[hook] = hooks.get(hook, 0) + 1
        if not first:
            logger.debug("callback %s.%s failed again: %s", name, hook, error)
            return
        logger.warning(
            "callback %s.%s failed: %s (its further failures are counted, not logged)",
            name,
            hook,
            error,
        )
        if self._on_failure is not None:
            self._on_failure(name, hook, exc)

    def _summarize(self) -> None:
        """One warning (and ``on_summary``) per callback that failed, then start counting anew."""
        with self._lock:
            failures, self._failures = self._failures, {}
        for index, hooks in sorted(failures.items()):
            name, total = type(self.callbacks[index]).__name__, sum(hooks.values())
            where = ", ".join(f"{hook} ({count})" for hook, count in hooks.items())
            logger.warning(
                "callback %s failed %d time%s in hooks %s",
                name,
                total,
                "" if total == 1 else "s",
                where,
            )
            if self._on_summary is not None:
                try:
                    self._on_summary(name, total, dict(hooks))
                except Exception as exc:  # noqa: BLE001 - e.g. a full disk at the run's end
                    logger.warning("could not record callback %s's failures: %s", name, exc)
