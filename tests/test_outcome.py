"""How a run ended, said honestly (reflex/checks/outcome.py): its end state and exit code, and
its failures counted by kind in one warning."""

from __future__ import annotations

from reflex.checks.outcome import (
    end_state,
    exit_code,
    failure_kinds,
    outcome_warnings,
    unpriced_warning,
)
from reflex.result import IterationRecord, OptimizationResult, RunEnd, StopReason


def _record(iteration: int, failed: str | None = None) -> IterationRecord:
    return IterationRecord(iteration, None, 0.5, {}, "p", failed=failed)


def _result(records: list[IterationRecord], **more: object) -> OptimizationResult:
    result = OptimizationResult("p", None, None, None)
    result.iterations = records
    for name, value in more.items():
        setattr(result, name, value)
    return result


def test_exit_codes_per_end_state() -> None:
    assert [
        exit_code(e) for e in (RunEnd.SUCCEEDED, RunEnd.PAUSED_BUDGET, RunEnd.NO_CANDIDATE)
    ] == [
        0,
        3,
        4,
    ]
    assert exit_code(RunEnd.INTERRUPTED) == 130 and exit_code(None) == 2


def test_failures_are_counted_by_kind_a_parse_error_by_its_proposal() -> None:
    records = [_record(1, "ProviderError: 500 x"), _record(2, "unusable answer"), _record(3)]
    records.append(_record(4, "ProviderError: 502 y"))
    proposals = [{"iteration": 2, "error": "no revised prompt found: <prompt> missing"}]
    assert failure_kinds(records, proposals) == {"ProviderError": 2, "no revised prompt found": 1}


def test_a_run_whose_every_iteration_failed_has_no_candidate() -> None:
    failed = _result([_record(1, "ProviderError: 500"), _record(2, "ProviderError: 500")])
    assert end_state(failed) is RunEnd.NO_CANDIDATE
    [warning] = outcome_warnings(failed)
    assert warning["kind"] == "no_candidate" and "all 2 iteration(s) failed" in warning["message"]
    assert "ProviderError x2" in warning["message"]
    gave_up = _result([], failed_proposals=[{"iteration": 1, "error": "no prompt: x"}])
    assert end_state(gave_up) is RunEnd.NO_CANDIDATE
    assert (
        "1 reasoning answer(s) were unusable (no prompt x1)"
        in outcome_warnings(gave_up)[0]["message"]
    )


def test_some_failures_warn_and_a_budget_stop_is_a_pause() -> None:
    some = _result([_record(1, "TimeoutError: slow"), _record(2)], stop=StopReason.BUDGET)
    assert end_state(some) is RunEnd.PAUSED_BUDGET
    assert outcome_warnings(some) == [
        {"kind": "failed_iterations", "message": "1 of 2 iterations failed (TimeoutError x1)"}
    ]
    assert end_state(_result([_record(1)])) is RunEnd.SUCCEEDED
    assert outcome_warnings(_result([_record(1)])) == []


def test_a_cost_budget_that_could_not_count_every_call_says_so() -> None:
    usage = {
        "task": {"cost_unknown": 5},
        "judge": {"cost_unknown": 0},
        "total": {"cost_unknown": 5},
    }
    [warning] = unpriced_warning(usage, max_cost=2.0)
    assert warning["kind"] == "unpriced_calls" and "on 5 calls" in warning["message"]
    assert "(5 task)" in warning["message"]
    assert unpriced_warning(usage, max_cost=None) == []
    assert unpriced_warning({"task": {"cost_unknown": 0}}, max_cost=2.0) == []
