"""The end of a mipro round (strategies/_mipro_finals.py): the best combinations by mean
measured on every val row, one by one, or under --race raced on growing val rungs (issue 33:
"evaluated on minibatches with the racing above"). The task and builder: tests/test_mipro.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_mipro import START, builder, events, task
from test_resume import START as KILLED_START
from test_resume import comparable, run_killed

from reflex import OptimizationResult, PromptOptimizer
from reflex.run.resume import list_runs
from reflex.testing import FakeModel


def kinds(result: OptimizationResult) -> list[str]:
    return [r.lineage[0]["type"] for r in result.iterations if r.lineage]


def raced(result: OptimizationResult) -> list[Any]:
    return [r for r in result.iterations if r.lineage and r.lineage[0]["type"] == "race"]


def test_a_rounds_finalists_are_raced_under_race(tmp_path: Path) -> None:
    fake = FakeModel(task).install()
    result = builder(tmp_path, race_top=3).set_race().configure(max_iterations=24).run(START)
    assert "full_eval" not in kinds(result)  # under --race no finalist is measured alone
    finals = raced(result)
    assert finals and all(r.race is not None for r in finals)
    dropped = [r for r in finals if r.race and r.race["dropped"]]
    assert dropped  # a worse finalist was dropped on a rung short of all the val rows
    for record in dropped:
        assert record.race is not None and record.race["rung"] < record.race["rungs"]
        assert record.val_score is None and not record.is_best
        assert record.rejected is not None and "dropped by the race" in record.rejected
    # A round races up to race_top finalists: more than one finalist looked at in a round.
    assert max(len(e["finalists"]) for e in events(result, "mipro_race")) > 1
    assert all(len(e["finalists"]) <= 3 for e in events(result, "mipro_race"))
    # Only a full val measurement makes the best prompt: the best is a raced survivor.
    [best] = [r for r in result.iterations if r.is_best]
    assert best.lineage[0]["type"] == "race" and best.val_score == 1.0
    assert best.race is not None and not best.race["dropped"]
    # Every finalist raced on prefixes of one seeded order of the val rows (paired by row).
    assert len(best.race["rows"]) == 24 and best.race["rung"] == best.race["rungs"] == 3
    for record in dropped:
        assert record.race is not None
        assert record.race["rows"] == best.race["rows"][: len(record.race["rows"])]
    assert result.best_prompt == best.system_prompt and result.final is not None
    assert result.final.mean_score == 1.0
    assert not fake.calls_to("fake/reasoner")


def test_without_race_one_finalist_is_measured_per_round(tmp_path: Path) -> None:
    FakeModel(task).install()
    result = builder(tmp_path, race_top=3).configure(max_iterations=24).run(START)
    assert "race" not in kinds(result) and "full_eval" in kinds(result)
    assert all(r.race is None for r in result.iterations)
    assert events(result, "mipro_race") == []


def test_the_call_budget_holds_under_race(tmp_path: Path) -> None:
    FakeModel(task).install()
    result = builder(tmp_path).set_race().set_budget(max_calls=200).run(START)
    assert result.usage["metric_calls"] <= 200
    assert raced(result) and result.final is not None


def test_a_raced_mipro_run_killed_resumes_to_the_same_result(tmp_path: Path) -> None:
    def build(run_dir: Path) -> PromptOptimizer:
        return (
            builder(run_dir, startup_trials=2, full_eval_every=3, race_top=3)
            .set_race()
            .configure(max_iterations=16, max_workers=2)
        )

    reference = FakeModel(task).install()
    expected = build(tmp_path / "ref").run(KILLED_START)
    total = len(reference.requests)
    assert raced(expected)
    for kill_at in (total // 3, 2 * total // 3):
        run_dir = tmp_path / f"kill{kill_at}"
        run_killed(run_dir, "mipro", kill_at, build=build, answer=task)
        assert list_runs(run_dir)[0].status == "interrupted"
        FakeModel(task).install()
        resumed = build(run_dir).run(KILLED_START, resume=True)
        assert comparable(resumed) == comparable(expected), f"kill at call {kill_at}"


def test_the_correction_counts_every_combination_a_trial_looked_at(tmp_path: Path) -> None:
    FakeModel(task).install()
    result = builder(tmp_path).configure(max_iterations=24).run(START)
    measured = {r.system_prompt for r in result.iterations if r.val_score is not None}
    tried = {r.system_prompt for r in result.iterations if r.lineage[0]["type"] == "trial"}
    seen = tried - measured - {START}  # looked at on an 8-row minibatch only
    assert seen and result.selection is not None
    assert result.selection["seen"] == len(seen)
    assert result.selection["k"] == len(measured) + len(seen)
    assert f"{len(seen)} seen on part of the rows" in result.selection["method"]


def test_the_dry_run_plans_raced_finalists_at_half_a_val_pass(tmp_path: Path) -> None:
    fake = FakeModel(task).install()
    plan = builder(tmp_path).set_race().set_budget("light").run(START, dry_run=True)
    assert fake.requests == []
    [note] = [line for line in plan.lines() if line.startswith("note      mipro:")]
    assert "the best 4 by mean raced on growing rungs of all 24 val rows" in note
    # light: 4 rounds of 5 x 8 minibatch rows, then 4 finalists at half a val pass (4 x 12).
    assert plan.budget["preset_calls"] == 10 + 24 + 2 * 24 + 4 * (5 * 8 + 4 * 12)
    assert plan.calls == plan.budget["preset_calls"]
