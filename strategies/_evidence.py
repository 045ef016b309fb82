"""What ``auto`` looks at to choose its next axis, and the (pure) choice itself.

Evidence: whether train references form a label set (so ``instructions`` has candidates),
how many rows have references, how the best prompt so far fails on a probe batch (format
failures: the output contains the reference but is not it, or a tool-call / JSON answer failed
in one of :data:`reflex.api.FORMAT_FAILURES`; content failures: anything else, of which
``wrong_function`` and ``value_failures`` count the tool-call / JSON kinds; on a label task an
answer outside the label set, ``off_label``, is a format failure: :func:`reflex.api.label_failure`),
the iterations and
metric calls left, and what each earlier phase gained on val. Format failures favour
``instructions`` (its format rule) and ``structural``; wrong functions ``instructions`` (its
tool-selection rule); wrong argument or field values ``fewshot`` (demos).

``calls_per_iteration`` is in model calls, like the budget: (batch + val rows) x task models x
the calls each row makes (``StrategyContext.calls_per_row``: several for a pipeline).
``min_calls_per_iteration`` is the val pass alone: a candidate is not screened when no val
pass could follow, so a phase is worth starting while that much of a call budget is left.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from reflex.api import (
    FORMAT_FAILURES,
    NEAR_MISS_LABEL,
    OFF_LABEL,
    VALUE_FAILURES,
    WRONG_FUNCTION,
    failure_kind,
    label_failure,
)

from .instructions import InstructionsOptions, instruction_candidates, label_set

if TYPE_CHECKING:
    from reflex.api import StrategyContext

__all__ = ["DATA_AXES", "PRIORITY", "Evidence", "PhaseOutcome", "choose_axis", "gather_evidence"]

# Base priority of each built-in axis; registered auto-eligible strategies get EXTRA_PRIORITY.
PRIORITY: dict[str, float] = {
    "instructions": 3.0,
    "fewshot": 2.5,
    "iterative": 2.0,
    "structural": 1.0,
    "pdo": 0.8,
}
EXTRA_PRIORITY = 0.5
# Data-derived axes give the same candidates when rerun, so they run at most once.
DATA_AXES = frozenset({"instructions", "fewshot"})
PDO_MIN_ITERATIONS = 3


@dataclass(frozen=True)
class Evidence:
    labels: bool
    references: float
    format_failures: float
    content_failures: float
    remaining_iterations: int
    remaining_calls: int | None
    calls_per_iteration: int
    min_calls_per_iteration: int  # one val pass: screening is skipped when it cannot follow
    # Shares of the probe rows whose tool-call / JSON answer named the wrong function, or gave
    # wrong argument / field values (both also in content_failures).
    wrong_function: float = 0.0
    value_failures: float = 0.0
    # Share of the probe rows answered outside the label set (a label task; also in
    # format_failures): near misses like ``sports`` for ``sport`` call for the label list.
    off_label: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class PhaseOutcome:
    axis: str
    gain: float
    iterations: int


def gather_evidence(ctx: StrategyContext, *, probe: bool) -> Evidence:
    """Evidence for the next choice; ``probe`` scores the best prompt on a few train rows."""
    train = list(ctx.train)
    with_refs = [e for e in train if e.ideal is not None and e.ideal.strip()]
    labels = bool(instruction_candidates(train, ctx.best_prompt, InstructionsOptions()))
    fmt = content = function = values = off = 0.0
    if probe and train:
        rows = train[: min(ctx.settings.batch_size, len(train))]  # fixed rows: usually cached
        snapshot = ctx.evaluate(ctx.best_prompt, rows)
        failing = [s for s in snapshot.samples if s.score is not None and s.score < 1.0]
        by_id = {e.id: e for e in rows}
        kinds = [failure_kind(s) for s in failing]
        if labels:  # an answer outside the label set is a format failure of its own
            names = label_set([e.ideal.strip() for e in with_refs if e.ideal], 20)
            kinds = [
                kind or label_failure(s.output, names)
                for s, kind in zip(failing, kinds, strict=True)
            ]
            off = sum(1 for kind in kinds if kind in (NEAR_MISS_LABEL, OFF_LABEL))
        formats = sum(
            1
            for s, kind in zip(failing, kinds, strict=True)
            if kind in FORMAT_FAILURES
            or (kind is None and _format_failure(s.output, by_id[s.example_id].ideal))
        )
        total = len(snapshot.samples)
        fmt = formats / total
        content = (len(failing) - formats) / total
        function = kinds.count(WRONG_FUNCTION) / total
        values = sum(1 for kind in kinds if kind in VALUE_FAILURES) / total
        off /= total
    return Evidence(
        labels=labels,
        references=len(with_refs) / len(train) if train else 0.0,
        format_failures=round(fmt, 4),
        content_failures=round(content, 4),
        remaining_iterations=max(0, ctx.settings.max_iterations - ctx.iteration),
        remaining_calls=ctx.budget.remaining_calls,
        calls_per_iteration=calls_per_iteration(ctx),
        min_calls_per_iteration=calls_per_iteration(ctx, screened=False),
        wrong_function=round(function, 4),
        value_failures=round(values, 4),
        off_label=round(off, 4),
    )


def calls_per_iteration(ctx: StrategyContext, *, screened: bool = True) -> int:
    """A candidate's calls: screening minibatch and val pass, or (``screened=False``) the val
    pass alone (the minibatch without val rows, which is then what selects)."""
    rows = len(ctx.val) or ctx.settings.batch_size
    if screened and len(ctx.val):
        rows += ctx.settings.batch_size
    return math.ceil(rows * len(ctx.settings.models) * ctx.budget.calls_per_row)


def _format_failure(output: str, ideal: str | None) -> bool:
    if not ideal or not ideal.strip():
        return False
    return ideal.strip().lower() in output.lower() and output.strip() != ideal.strip()


def _score(axis: str, ev: Evidence, runs: list[PhaseOutcome], max_repeats: int) -> float | None:
    """The axis's priority now, or None when it is not eligible."""
    if runs and (axis in DATA_AXES or len(runs) >= max_repeats or runs[-1].gain <= 0):
        return None
    base = PRIORITY.get(axis, EXTRA_PRIORITY)
    if axis == "instructions":
        return base + 2 * ev.format_failures + ev.wrong_function if ev.labels else None
    if axis == "fewshot":
        return base + ev.content_failures + ev.value_failures if ev.references > 0 else None
    if axis == "pdo":
        cost = 4 * ev.calls_per_iteration
        if ev.remaining_iterations < PDO_MIN_ITERATIONS or (
            ev.remaining_calls is not None and ev.remaining_calls < cost
        ):
            return None
    bonus = {
        "iterative": ev.content_failures + 0.5 * ev.format_failures,
        "structural": ev.format_failures,
    }.get(axis, 0.0)
    return (base + bonus) * (0.5 ** len(runs))


def choose_axis(
    ev: Evidence, history: Sequence[PhaseOutcome], axes: Sequence[str], max_repeats: int = 2
) -> str | None:
    """The next axis to run, or None when nothing is worth the remaining budget.

    An axis whose last phase gained nothing on val is not chosen again; one that gained may
    repeat (at half priority each time, ``max_repeats`` phases at most). Data-derived axes run
    once. When the last two phases both gained nothing, ``pdo`` (a broader search) is favoured.
    Ties keep the order of ``axes``.
    """
    if ev.remaining_iterations <= 0:
        return None
    if ev.remaining_calls is not None and ev.remaining_calls < ev.min_calls_per_iteration:
        return None
    plateau = len(history) >= 2 and all(h.gain <= 0 for h in history[-2:])
    best: tuple[float, str] | None = None
    for axis in axes:
        score = _score(axis, ev, [h for h in history if h.axis == axis], max_repeats)
        if score is None:
            continue
        score += 1.5 if axis == "pdo" and plateau else 0.0
        if best is None or score > best[0]:
            best = (score, axis)
    return best[1] if best else None
