"""gepa: Pareto front and dominance, merges, the budget plan, lineage (the rewrite, the minibatch
gate and its memory: test_gepa_reflect.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import BETTER, make_rows

from reflex import PromptOptimizer
from reflex.data.prompts import PromptSpec
from reflex.testing import FakeModel, FakeRequest

START = "Classify the sentiment."


def builder(run_dir: Path, rows: int = 40, **options: Any) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows(rows))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("gepa", **options)
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(run_dir)
        .configure(max_iterations=6, early_stopping_patience=None, max_workers=4)
        .set_accept("any")  # gepa's own selection on 8 val rows; the gate: test_acceptance.py
    )


# --- Pareto front ------------------------------------------------------------------------------


# --- merge -------------------------------------------------------------------------------------


# --- budget plan -------------------------------------------------------------------------------


# --- the search on the fake model ----------------------------------------------------------------


def test_gepa_improves_and_reports_lineage(fake_model: FakeModel, tmp_path: Path) -> None:
    result = builder(tmp_path).run(START)
    assert result.best_prompt == BETTER and result.final is not None
    assert result.final.mean_score == 1.0
    assert result.best_components == {"system": BETTER}
    seed, child = result.lineage[:2]
    assert seed["kind"] == "seed" and child["parents"] == [0] and child["changed"] == ["system"]
    assert child["val_score"] == 1.0 and child["minibatch"][1] > child["minibatch"][0]
    # Once the parent is perfect on its minibatch, no more reasoning calls are made.
    skipped = [r for r in result.iterations if r.rejected and "perfect" in r.rejected]
    assert skipped and all(r.val_score is None for r in skipped)
    assert len(fake_model.calls_to("fake/reasoner")) == 1


ROLE, FORMAT = "RULE-A", "RULE-B"


def _two_part_task(request: FakeRequest) -> str:
    """RULE-A fixes even rows, RULE-B odd rows; without either only rows 1, 5, 9, ... are right."""
    index = int(request.user.split()[1].rstrip(":"))
    ideal = "positive" if index % 2 == 0 else "negative"
    a, b = ROLE in request.system, FORMAT in request.system
    ok = (a and index % 2 == 0) or (b and index % 2 == 1)
    ok = ok or (not a and not b and index % 4 == 1)
    return ideal if ok else "unsure"


def _two_part(request: FakeRequest) -> str:
    if request.model != "fake/reasoner":
        return _two_part_task(request)
    brief = request.messages[1]["content"]  # the brief, also when this is a retry
    n = brief.count("- scored ")
    if "Rewrite the component 'role'" in brief:
        return f"<prompt>You classify reviews. {ROLE} ({n})</prompt>"
    if ROLE in brief.split("<current>")[0]:
        return f"<prompt>Be careful, again ({n}).</prompt>"  # no help on this lineage
    return f"<prompt>Be careful. {FORMAT} ({n})</prompt>"


def test_merge_on_a_two_component_prompt(tmp_path: Path) -> None:
    FakeModel(_two_part).install()
    spec = PromptSpec({"role": "You classify reviews.", "format": "Be careful."})
    result = builder(tmp_path, minibatch_size=6).configure(max_iterations=10).run(spec)
    merges = [c for c in result.lineage if c["kind"] == "merge"]
    assert merges and sorted(merges[0]["changed"]) == ["format", "role"]
    assert result.best_components is not None
    assert ROLE in result.best_components["role"] and FORMAT in result.best_components["format"]
    assert result.best_prompt == spec.render(result.best_components)
    assert result.final is not None and result.final.mean_score == 1.0
    assert all(r.components is not None for r in result.iterations if not r.failed)
