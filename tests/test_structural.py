"""``structural``: the layout transform library and the round logic, on a layout-sensitive fake."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows

from reflex import ConfigurationError, OptimizationResult, PromptOptimizer
from reflex.testing import FakeModel, FakeRequest
from reflex_strategies._layout import TRANSFORMS

START = "You are a film critic. Classify the sentiment. Do not explain. Answer with one word."
ANSWERS = {row["input"]: row["ideal"] for row in make_rows(60)}


def events(result: OptimizationResult) -> list[dict[str, Any]]:
    lines = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def layout_task(marker: str, reasoner: str = "") -> Any:
    """Right on every row when the system prompt contains ``marker``, else on every third."""

    def answer(request: FakeRequest) -> str:
        if request.model.startswith("fake/reasoner"):
            return reasoner
        ideal = ANSWERS[request.user]
        index = int(request.user.split()[1].rstrip(":"))
        return ideal if marker in request.system or index % 3 == 0 else f"It is {ideal}."

    return answer


def builder(run_dir: Path, **options: Any) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows(40))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("structural", **options)
        .set_run_dir(run_dir)
        .configure(max_iterations=4, early_stopping_patience=None, batch_size=6)
    )


def test_untried_transforms_first_and_winner_adopted(tmp_path: Path) -> None:
    fake = FakeModel(layout_task("<output_format>")).install()
    result = builder(tmp_path, variants_per_round=2).run(START)
    rounds = [e for e in events(result) if e["type"] == "structural_round"]
    order = list(TRANSFORMS)
    assert list(rounds[0]["scores"]) == order[:2]  # library order, untried first
    # flat_minimal is skipped: START is already flat, so it would re-score the incumbent.
    assert list(rounds[1]["scores"]) == ["xml_tags", "role_task_format"]
    assert "<output_format>" in result.best_prompt
    winner = next(r for r in result.iterations if r.is_best)
    assert winner.accepted and winner.change is not None and winner.change > 0
    assert all(r.rejected for r in result.iterations if not r.is_best)
    assert not fake.calls_to("fake/reasoner")  # no reasoning model configured


def test_all_variants_scored_on_the_same_batch(tmp_path: Path) -> None:
    FakeModel(layout_task("never")).install()
    result = builder(tmp_path, variants_per_round=3).run(START)
    evals = [e for e in events(result) if e["type"] == "evaluation" and e["label"] == "train:it1"]
    assert len(evals) == 4 and {e["examples"] for e in evals} == {6}  # incumbent + 3 variants
    first = result.iterations[0]
    assert first.rejected and first.val_score is None  # no variant beat the incumbent


def test_freeform_restructure_and_failed_answers(tmp_path: Path) -> None:
    good = "<edit>format last</edit><prompt>Classify the sentiment.\n\nFORMAT: one word.</prompt>"
    fake = FakeModel(layout_task("FORMAT:", good)).install()
    result = builder(tmp_path, variants_per_round=1).set_reasoning_model("fake/reasoner").run(START)
    assert result.best_prompt.endswith("FORMAT: one word.")
    assert fake.calls_to("fake/reasoner")
    calls = [e for e in events(result) if e["type"] == "reasoning_call"]
    assert calls[0]["purpose"] == "structural: free-form restructure"
    assert calls[0]["outcome"] == "ok" and calls[0]["tokens"] > 0

    FakeModel(layout_task("never", "I would not change anything.")).install()
    failed = builder(tmp_path / "b", variants_per_round=1).set_reasoning_model("fake/reasoner")
    result = failed.run(START)
    outcomes = [e["outcome"] for e in events(result) if e["type"] == "reasoning_call"]
    assert outcomes[:2] == ["unusable", "unusable"]  # retried once, then given up
    assert "free-form restructure failed" in result.iterations[0].reasoning
    assert result.completed
    # Visible in the result as failed proposals, one per round that asked.
    failures = result.failed_proposals
    assert failures and len(failures) == len(result.iterations)
    first = failures[0]
    assert first["purpose"] == "structural: free-form restructure" and first["attempts"] == 2
    assert first["iteration"] == 1 and first["phase"] == "structural" and first["error"]
    assert result.to_dict()["failed_proposals"] == failures
    assert [e for e in events(result) if e["type"] == "failed_proposal"]


def test_options_reject_unknown_transform(tmp_path: Path) -> None:
    FakeModel(layout_task("x")).install()
    with pytest.raises(ConfigurationError, match="unknown transform"):
        builder(tmp_path, transforms=["upside_down"]).run(START)
