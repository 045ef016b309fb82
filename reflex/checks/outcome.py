"""How a run ended, said honestly: the end state of a measured run and its failures by kind.

A run whose every iteration failed (no candidate could be proposed or evaluated) is not a
success, whatever stopped its loop: it ends as ``RunEnd.NO_CANDIDATE`` with a ``no_candidate``
warning that counts the failures by kind. A budget that stopped the loop ends it as
``RunEnd.PAUSED_BUDGET`` (the final test score is still measured, inside its reserve).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from reflex.result import IterationRecord, OptimizationResult, RunEnd, StopReason

__all__ = [
    "EXIT_CODES",
    "end_state",
    "exit_code",
    "failure_kinds",
    "outcome_warnings",
    "unpriced_warning",
]

#: The command line's exit status per end state (docs/cli.md, README): 0 succeeded, 3 paused on a
#: budget with an honest final score, 4 no usable candidate, 2 a run that could not finish
#: (bad input, a budget too small for the baseline, a provider fault), 130 Ctrl-C.
EXIT_CODES: Mapping[RunEnd, int] = {
    RunEnd.SUCCEEDED: 0,
    RunEnd.PAUSED_BUDGET: 3,
    RunEnd.NO_CANDIDATE: 4,
    RunEnd.BUDGET_STOPPED: 2,
    RunEnd.FAILED: 2,
    RunEnd.INTERRUPTED: 130,
}


def exit_code(end: RunEnd | None) -> int:
    """The exit status of a run that ended in ``end`` (None: a failure, 2)."""
    return EXIT_CODES[end] if end is not None else 2


def _kind(text: str) -> str:
    """The kind of a failure: its message up to the first ``:`` (no details, no ids)."""
    head = text.split(":", 1)[0].strip()
    return head[:80] or "unknown error"


def failure_kinds(
    iterations: Sequence[IterationRecord], failed_proposals: Sequence[Mapping[str, Any]] = ()
) -> dict[str, int]:
    """Failed iterations counted by kind, most frequent first.

    A failed iteration whose reasoning answer was unusable is counted by the parse error of its
    ``failed_proposals`` entry (e.g. "no revised prompt found"), others by their own message.
    """
    by_iteration = {int(p.get("iteration", 0)): str(p.get("error", "")) for p in failed_proposals}
    kinds: Counter[str] = Counter()
    for record in iterations:
        if record.failed is not None:
            kinds[_kind(by_iteration.get(record.iteration) or record.failed)] += 1
    return dict(kinds.most_common())


def _no_candidate(result: OptimizationResult) -> bool:
    if result.iterations:
        return all(record.failed is not None for record in result.iterations)
    return bool(result.failed_proposals)  # the strategy gave up before recording anything


def end_state(result: OptimizationResult) -> RunEnd:
    """The end state of a run whose final test evaluation ran."""
    if _no_candidate(result):
        return RunEnd.NO_CANDIDATE
    return RunEnd.PAUSED_BUDGET if result.stop is StopReason.BUDGET else RunEnd.SUCCEEDED


def _counted(kinds: Mapping[str, int]) -> str:
    return "; ".join(f"{kind} x{n}" for kind, n in kinds.items())


def outcome_warnings(result: OptimizationResult) -> list[dict[str, str]]:
    """``no_candidate`` when no candidate could be proposed or evaluated, else
    ``failed_iterations`` when some iterations failed; each with the failures by kind."""
    kinds = failure_kinds(result.iterations, result.failed_proposals)
    failed = sum(kinds.values())
    if _no_candidate(result) and (result.end_state is None or result.end_state.measured):
        if not result.iterations:
            kinds = dict(Counter(_kind(str(p.get("error", ""))) for p in result.failed_proposals))
            what = f"{len(result.failed_proposals)} reasoning answer(s) were unusable"
        else:
            what = f"all {failed} iteration(s) failed"
        message = (
            f"no usable candidate: {what} ({_counted(kinds)}); the final score is the initial "
            "prompt's"
        )
        return [{"kind": "no_candidate", "message": message}]
    if failed:
        message = f"{failed} of {len(result.iterations)} iterations failed ({_counted(kinds)})"
        return [{"kind": "failed_iterations", "message": message}]
    return []


def unpriced_warning(usage: Mapping[str, Any], max_cost: float | None) -> list[dict[str, str]]:
    """``unpriced_calls`` when ``max_cost`` is set but some paid calls had no price: the cost
    budget did not count them (give one with ``--price MODEL=IN:OUT`` / ``set_price``)."""
    if max_cost is None:
        return []
    roles = {
        role: int(u.get("cost_unknown", 0))
        for role, u in usage.items()
        if role != "total" and isinstance(u, Mapping) and u.get("cost_unknown")
    }
    if not roles:
        return []
    counted = ", ".join(f"{n} {role}" for role, n in roles.items())
    message = (
        f"--max-cost ${max_cost:g} was not enforced on {sum(roles.values())} calls that could "
        f"not be priced ({counted}); give their price with --price MODEL=IN:OUT (USD per "
        "million input:output tokens) or set_price(...)"
    )
    return [{"kind": "unpriced_calls", "message": message}]
