"""Budget messages say true figures and what to do (issue 20, item 9).

``--max-seconds 0.001`` used to end with "time budget: 0s used of 0s, 0s of it kept for the
final": every figure rounded to a false 0, and no hint of how much time the run needs. A budget
message now gives the seconds (and dollars) with enough digits to be true, and what the run
measured it needs (the baseline's time, or the pace of the rows evaluated so far). Nothing here
times anything: the clock the budget reads is moved by hand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import make_rows

from reflex.cli import main
from reflex.config import BudgetConfig
from reflex.errors import BudgetExhausted
from reflex.models.usage import Ledger
from reflex.run.budget import Budget, figure
from reflex.testing import FakeModel

MODELS = ("-m", "fake/task", "--reasoning-model", "fake/reasoner")


@pytest.mark.parametrize(
    ("value", "decimals", "text"),
    [
        (0.0123, 0, "0.0123"),
        (0.001, 0, "0.00100"),
        (44.96, 0, "45.0"),
        (1234.4, 0, "1234"),
        (0.0, 0, "0"),
        (0.00004, 4, "0.0000400"),
        (12.34567, 4, "12.3457"),
    ],
)
def test_figures_are_never_rounded_to_a_false_zero(value: float, decimals: int, text: str) -> None:
    assert figure(value, decimals) == text


def _exhausted(budget: Budget, **kwargs: bool) -> str:
    with pytest.raises(BudgetExhausted) as caught:
        budget.check_evaluation(1, **kwargs)
    return str(caught.value)


def test_a_tiny_time_budget_gives_its_figures_and_what_to_do() -> None:
    budget = Budget(BudgetConfig(max_seconds=0.001), Ledger())
    budget.elapsed_before = 0.0123
    line = _exhausted(budget)
    # 0.0123 s plus the few microseconds since the budget was made: three digits, never "0s".
    assert re.search(r"time budget: 0\.0\d{3} s used of 0\.001 s, before the baseline was", line)
    assert "0s used of 0s" not in line and "raise --max-seconds" in line
    # Once rows were evaluated (the preflight), the message says what the baseline needs.
    budget.baseline_rows, budget.pace = 40, (10, 0.5)
    line = _exhausted(budget)
    assert "the baseline alone needs about 2.00 s on this machine (40 test rows" in line


def test_after_the_baseline_the_message_names_its_time_and_the_reserve() -> None:
    budget = Budget(BudgetConfig(max_seconds=45), Ledger())
    kept = budget.reserve_final(rows=10, requests=10, cost=0.0, judged=0, seconds=2.5, paid=10)
    assert kept == 5.0
    budget.elapsed_before = 41.0
    line = _exhausted(budget)
    assert re.search(r"time budget: 41\.\d s used of 45 s, 5\.00 s of it kept for the final", line)
    assert "the baseline alone took 2.50 s on this machine" in line
    budget.elapsed_before = 60.0
    budget.reserved_seconds = 0.004  # an almost free final ran out of its reserve (deadline)
    line = str(budget.time_exhausted(use_reserve=True))
    assert "the final test evaluation ran out of its reserve: time budget: 60.0 s used" in line
    assert "(0.00400 s were kept for it)" in line


def test_a_tiny_cost_budget_is_not_printed_as_zero_dollars() -> None:
    budget = Budget(BudgetConfig(max_cost=0.00001), Ledger())
    budget.reserved_cost = 0.00002
    line = _exhausted(budget)
    assert "cost budget: $0.0000200 spent or reserved of $0.0000100" in line, line
    assert "$0.0000 " not in line


def test_cli_max_seconds_0_001_says_what_it_used_and_what_to_do(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fake_model: FakeModel,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in make_rows(30)), encoding="utf-8"
    )
    (tmp_path / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["optimize", "data.jsonl", "prompt.md", *MODELS, "--max-seconds", "0.001"])
    err = capsys.readouterr().err
    [line] = [x for x in err.splitlines() if x.startswith("error:")]
    assert exit_info.value.code == 2
    used = re.search(r"time budget: ([0-9.]+) s used of 0\.001 s", line)
    assert used is not None and float(used.group(1)) > 0, line
    assert "0s used of 0s" not in line and "raise --max-seconds" in line
