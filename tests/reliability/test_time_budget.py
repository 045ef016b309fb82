"""``--max-seconds`` keeps the final measurement (issue 18, item 3).

Time is reserved for the final test evaluation from the baseline's own measurement (as
``--max-calls`` reserves calls); at the search's deadline, calls still in flight are cancelled,
so a stuck provider cannot keep the run from its honest final score. Nothing here asserts how
long anything took: the budget is simulated by moving the clock the budget reads, and the stuck
calls are held by the local endpoint's gate until the run has returned.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from conftest import make_rows
from test_faults import answer

from reflex import PromptOptimizer
from reflex.config import BudgetConfig
from reflex.errors import BudgetExhausted
from reflex.models.usage import Ledger
from reflex.result import RunEnd, StopReason
from reflex.run.budget import Budget
from reflex.testing.endpoint import ChatRequest, serve

START = "Classify the sentiment."


def test_search_stops_where_the_final_reserve_begins() -> None:
    budget = Budget(BudgetConfig(max_seconds=45), Ledger())
    budget.reserved_seconds = 5.0
    budget.elapsed_before = 41.0  # 41 s used: the search has passed its deadline (45 - 5)
    with pytest.raises(BudgetExhausted, match=r"5\.00 s of it kept for the final"):
        budget.check_evaluation(10)
    budget.check_evaluation(10, use_reserve=True)  # the final still runs
    assert budget.seconds_left(use_reserve=True) == pytest.approx(5.0, abs=0.5)
    budget.elapsed_before = 60.0  # the search overran: the final still gets its whole reserve
    assert budget.seconds_left(use_reserve=True) == 5.0


def test_time_budget_cancels_stuck_calls_and_keeps_the_final(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-time-budget")
    gate = threading.Event()
    gate.set()

    def stuck_after_first_proposal(request: ChatRequest) -> str:
        if request.model == "reasoner":
            gate.clear()  # every task call after this answer hangs until the run has returned
        return answer(request)

    try:
        with serve(responder=stuck_after_first_proposal, gate=gate) as url:
            result = (
                PromptOptimizer()
                .set_dataset(make_rows(30))
                .add_provider("openai/task", api_base=url)
                .add_metric("exact_match")
                .set_reasoning_model("openai/reasoner", base_url=url)
                .set_budget(max_seconds=12)
                .configure(max_iterations=5, run_dir=str(tmp_path))
                .run(START)
            )
    finally:
        gate.set()
    assert result.stop is StopReason.BUDGET and "time budget" in result.stop_reason
    assert result.end_state is RunEnd.PAUSED_BUDGET and not result.completed
    # The final test score is measured (the best prompt is still the initial one: its test
    # rows are answered from the cache, so the stuck endpoint does not matter to it).
    assert result.final is not None and result.baseline is not None
    assert result.final.system_prompt == START
    assert [s.example_id for s in result.final.samples] == [
        s.example_id for s in result.baseline.samples
    ]


class _Clock:
    """``time`` for the budget's module: the real clock plus a jump the test makes."""

    def __init__(self) -> None:
        self.offset = 0.0

    def monotonic(self) -> float:
        import time

        return time.monotonic() + self.offset


def test_a_budget_spent_before_the_val_baseline_pauses_the_run_with_its_final(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The time budget runs out after the test baseline, before the initial prompt's val score
    (a busy machine, a tiny --max-seconds): the run pauses with the initial prompt's final
    measured (from the cache, 0 calls), as when the search is stopped; it used to end as a
    failure (exit 2) with no final score."""
    from conftest import responder

    from reflex.callbacks import Callback
    from reflex.testing import FakeModel

    clock = _Clock()
    monkeypatch.setattr("reflex.run.budget.time", clock)

    class SlowBaseline(Callback):
        def on_baseline(self, snapshot: object) -> None:
            clock.offset += 60.0  # the baseline "took" a minute of a 100 s budget

    fake = FakeModel(responder)
    fake.install()
    result = (
        PromptOptimizer()
        .set_dataset(make_rows(30))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_budget(max_seconds=100)
        .set_run_dir(tmp_path)
        .configure(max_iterations=3)
        .run(START, callbacks=[SlowBaseline()])
    )
    assert result.stop is StopReason.BUDGET and "time budget" in result.stop_reason
    assert result.end_state is RunEnd.PAUSED_BUDGET and not result.completed
    assert result.iterations == [] and result.best_prompt == START
    assert result.final is not None and result.baseline is not None
    assert result.final.mean_score == result.baseline.mean_score
    assert not [r for r in fake.requests if r.model.startswith("fake/reasoner")]
