"""promote's gate without any registry: the run's winner against another prompt on the run's
test rows (or another dataset's), refused only on a significant regression at the run's alpha,
the calls counted before any is made and kept in the run's cache after."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import BETTER, KEYWORD, make_rows, task_answer
from test_engine import START, builder

from reflex.errors import ConfigurationError
from reflex.run.promotion import plan_gate
from reflex.testing import FakeModel, FakeRequest

OTHER = "Say which sentiment the review has."  # never asked during the run: not cached


@pytest.fixture
def run(fake_model: FakeModel, tmp_path: Path) -> Path:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in make_rows()))
    result = builder(tmp_path / "runs").set_dataset(rows).run(START)
    assert result.best_prompt == BETTER
    return Path(str(result.run_dir))


def test_the_run_start_prompt_costs_nothing_and_loses(run: Path, fake_model: FakeModel) -> None:
    gate = plan_gate(run, START, "v1 (@production)")
    test_ids = json.loads((run / "splits.json").read_text())["test"]
    assert [r.id for r in gate.rows] == test_ids
    assert gate.calls == {"winner": 0, "incumbent": 0}  # the baseline and final are cached
    before = len(fake_model.requests)
    outcome = gate.decide()
    assert len(fake_model.requests) == before
    final = json.loads((run / "result.json").read_text())["final"]["mean_score"]
    assert outcome.current.mean_score == pytest.approx(final)
    assert outcome.delta > 0 and not outcome.regressed and outcome.test is not None


def test_an_uncached_incumbent_is_counted_paid_once_then_cached(
    run: Path, fake_model: FakeModel
) -> None:
    gate = plan_gate(run, OTHER, "v7 (@production)")
    rows = len(gate.rows)
    assert gate.calls == {"winner": 0, "incumbent": rows}
    assert "calls      winner 0, v7 (@production) " + str(rows) in gate.plan_lines()[1]
    before = len(fake_model.requests)
    gate.decide()
    assert len(fake_model.requests) - before == rows  # exactly what was announced
    assert plan_gate(run, OTHER, "v7").calls == {"winner": 0, "incumbent": 0}


def test_a_tie_is_no_regression(run: Path) -> None:
    outcome = plan_gate(run, BETTER + " Be brief.", "v2").decide()
    assert outcome.delta == pytest.approx(0.0) and not outcome.regressed


def test_another_dataset_gates_on_all_its_rows(run: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps(r) + "\n" for r in make_rows(40)[30:]))
    gate = plan_gate(run, START, "v1", dataset=other)
    assert len(gate.rows) == 10 and gate.rows_label == f"10 rows of {other}"
    gate.close()


def test_changed_rows_are_refused(run: Path) -> None:
    source = json.loads((run / "run.json").read_text())["dataset_source"]
    Path(source).write_text("".join(json.dumps(r) + "\n" for r in make_rows(31)))
    with pytest.raises(ConfigurationError, match="changed since run"):
        plan_gate(run, START, "v1")


@pytest.fixture
def worse_run(fake_model: FakeModel, tmp_path: Path) -> Path:
    """A run whose reasoner never finds the keyword: its winner scores like START, below
    BETTER on the two thirds of the rows START gets wrong."""

    def answer(request: FakeRequest) -> str:
        if "reasoner" in request.model:
            return "<diagnosis>-</diagnosis>\n<edit>reword</edit>\n<prompt>Classify it.</prompt>"
        return task_answer(request)

    fake_model.responder = answer
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in make_rows()))
    result = builder(tmp_path / "runs").set_dataset(rows).run(START)
    assert KEYWORD not in result.best_prompt
    return Path(str(result.run_dir))


def test_a_dip_the_paired_test_cannot_tell_from_noise_passes(worse_run: Path) -> None:
    outcome = plan_gate(worse_run, BETTER, "v2 (@production)").decide()
    assert outcome.delta < 0 and outcome.test is not None  # lower on the run's 6 test rows...
    assert outcome.test.p_value >= 0.05 and not outcome.test.significant  # ...but not significantly
    assert outcome.alpha == 0.05 and not outcome.regressed
    assert "verdict   ok" in outcome.lines()
    assert "rule      regression: the mean of these 6 rows below the baseline by more than " in (
        "\n".join(outcome.lines())
    )


def test_a_significant_regression_is_refused(worse_run: Path, tmp_path: Path) -> None:
    every = json.loads((worse_run / "run.json").read_text())["dataset_source"]
    outcome = plan_gate(worse_run, BETTER, "v2", dataset=every).decide()  # all 30 rows
    assert outcome.test is not None and outcome.test.significant
    assert outcome.test.p_value < 0.05 and outcome.delta < 0 and outcome.regressed
    assert "verdict   REGRESSION" in outcome.lines()
    # A tolerance as large as the drop lets even a significant one through.
    within = plan_gate(worse_run, BETTER, "v2", dataset=every).decide(-outcome.delta)
    assert within.test is not None and within.test.significant and not within.regressed


def test_the_run_alpha_is_the_level_of_its_own_paired_test(worse_run: Path) -> None:
    path = worse_run / "result.json"
    result = json.loads(path.read_text())
    assert result["significance"]["alpha"] == 0.05
    result["significance"]["alpha"] = 0.3  # a run tested at 30%: the same dip is significant
    path.write_text(json.dumps(result))
    outcome = plan_gate(worse_run, BETTER, "v2").decide()
    assert outcome.alpha == 0.3 and outcome.test is not None
    assert outcome.test.p_value < 0.3 and outcome.regressed
