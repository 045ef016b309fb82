"""promote's gate without any registry: the run's winner against another prompt on the run's
test rows (or another dataset's), check's rule, the calls counted before any is made and kept
in the run's cache after."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import BETTER, make_rows
from test_engine import START, builder

from reflex.errors import ConfigurationError
from reflex.run.promotion import plan_gate
from reflex.testing import FakeModel

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
