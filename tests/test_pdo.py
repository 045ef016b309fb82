"""``pdo``: ranking maths on a known win matrix, pruning, and runs on the user's metric."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import make_rows, responder

from reflex import OptimizationResult, PromptOptimizer
from reflex.testing import FakeModel, FakeRequest
from reflex_strategies.pdo import Pool

START = "Classify the sentiment."


def test_pruning_never_drops_an_unduelled_mutant_or_the_champion() -> None:
    pool = Pool()
    for text in ("a", "b", "c", "d"):
        pool.add(text, "seed")
    pool.record(0, 1, [1.0, 1.0, 1.0], eta=0.5)
    pool.record(0, 2, [1.0, 1.0, 0.0], eta=0.5)
    pool.record(1, 2, [1.0, 0.5, 1.0], eta=0.5)
    pool.add("mutant", "mutant of #0", mutant=True)
    dropped = pool.prune(max_pool=2)
    alive = pool.alive
    assert 4 in alive and pool.champion() == 0  # the un-duelled mutant survives
    assert 3 in alive  # so does the seed that never duelled
    assert dropped == [2, 1] and len(alive) == 3  # above max_pool rather than drop them


def reasoner(request: FakeRequest) -> str:
    if request.model != "fake/reasoner":
        return responder(request)
    if "head-to-head" in request.user:  # mutation: one new variant each time
        n = len(request.user)
        return f"<edit>mutate</edit><prompt>{START} Variant {n}. Answer with one word.</prompt>"
    return f"<prompt>{START} Be brief.</prompt>\n<prompt>{START} Think about tone.</prompt>"


def run(tmp_path: Path, **options: Any) -> OptimizationResult:
    return (
        PromptOptimizer()
        .set_dataset(make_rows(40))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("pdo", **options)
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path)
        .configure(max_iterations=4, early_stopping_patience=None, batch_size=6)
        .run(START)
    )


def events(result: OptimizationResult, kind: str) -> list[dict[str, Any]]:
    lines = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["type"] == kind]


def test_pdo_reports_metric_scores_and_mutants_duel(tmp_path: Path) -> None:
    FakeModel(reasoner).install()
    result = run(tmp_path, mutate_every=1, pool_size=3, max_pool=3)
    assert len(result.iterations) == 4
    evaluations = events(result, "evaluation")
    for record in result.iterations:
        # The score is the champion's metric score on the engine's train rows, not a win rate.
        train = [e for e in evaluations if e["label"] == f"train:it{record.iteration}"]
        assert record.score == train[-1]["mean_score"] and train[-1]["examples"] == 6
        assert record.val_score is not None
    mutants = [e["index"] for e in events(result, "pdo_mutant")]
    assert mutants
    duelled = {e["second"] for e in events(result, "pdo_duel")} | {
        e["first"] for e in events(result, "pdo_duel")
    }
    assert set(mutants[:-1]) <= duelled  # every mutant but maybe the last one has duelled
    assert "Answer with one word." in result.best_prompt
    purposes = {e["purpose"] for e in events(result, "reasoning_call")}
    assert purposes == {"pdo: seed the pool", "pdo: mutate a top prompt"}


def test_pdo_is_seeded_and_works_without_reasoning_model(tmp_path: Path) -> None:
    FakeModel(reasoner).install()
    one, two = run(tmp_path / "a"), run(tmp_path / "b")
    assert [r.system_prompt for r in one.iterations] == [r.system_prompt for r in two.iterations]
    fake = FakeModel(responder).install()
    result = (
        PromptOptimizer()
        .set_dataset(make_rows(40))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("pdo", mutate_every=1)
        .set_run_dir(tmp_path / "c")
        .configure(max_iterations=3, early_stopping_patience=None)
        .run("You are a critic. Classify the sentiment. Do not explain.")
    )
    assert len(result.iterations) == 3 and not fake.calls_to("fake/reasoner")
    origins = events(result, "pdo_pool")[0]["origins"]
    assert origins[0] == "base" and all(o.startswith("layout:") for o in origins[1:])


def test_unusable_reasoning_answers_are_failed_proposals(tmp_path: Path) -> None:
    def mumbling(request: FakeRequest) -> str:
        return "I like all of them." if request.model == "fake/reasoner" else responder(request)

    FakeModel(mumbling).install()
    result = run(tmp_path, mutate_every=1, pool_size=3, max_pool=4)
    assert result.completed and len(result.iterations) == 4
    purposes = [f["purpose"] for f in result.failed_proposals]
    assert purposes[0] == "pdo: seed the pool" and "pdo: mutate a top prompt" in purposes
    assert all(
        f["attempts"] == 2 and f["error"] and f["phase"] == "pdo" for f in result.failed_proposals
    )
    again = OptimizationResult.from_dict(result.to_dict())
    assert again.failed_proposals == result.failed_proposals
    assert "mutation of #0 failed" in "".join(r.reasoning for r in result.iterations)
