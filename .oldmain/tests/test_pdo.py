"""``pdo``: ranking maths on a known win matrix, pruning, and runs on the user's metric."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows, responder

from reflex import OptimizationResult, PromptOptimizer
from reflex.testing import FakeModel, FakeRequest
from reflex_strategies import _ranking as rk
from reflex_strategies.pdo import Pool

START = "Classify the sentiment."
# wins[i][j]: rows i won against j. 0 beats 1 (7-3) and 2 (3-2); 1 beats 2 (8-2).
WINS = [[0.0, 7.0, 3.0], [3.0, 0.0, 8.0], [2.0, 2.0, 0.0]]
ALL = [0, 1, 2]


def test_copeland_borda_win_rate_on_known_matrix() -> None:
    assert rk.copeland(WINS, ALL) == [1.0, 0.5, 0.0]
    assert rk.borda(WINS, ALL) == pytest.approx([(0.7 + 0.6) / 2, (0.3 + 0.8) / 2, (0.4 + 0.2) / 2])
    assert rk.win_rate(WINS, ALL) == pytest.approx([10 / 15, 11 / 20, 4 / 15])
    # Restricted to the pool that is still alive: 2 has been pruned.
    assert rk.copeland(WINS, [0, 1]) == [1.0, 0.0, 0.0]


def test_elo_replays_duels_and_scales() -> None:
    scores = rk.elo([(0, 1, 1.0), (1, 2, 1.0), (0, 2, 0.75)], 3, ALL)
    assert scores[0] == 1.0 and scores[2] == 0.0 and 0.0 < scores[1] < 1.0
    assert rk.elo([], 3, ALL) == [0.5, 0.5, 0.5]  # no duels: everyone equal


def test_fusion_and_adaptive_weights() -> None:
    ranks = {"copeland": [1.0, 0.0], "borda": [0.0, 1.0], "elo": [1.0, 0.0], "win_rate": [0.5, 0.5]}
    weights = dict.fromkeys(rk.METHODS, 0.25)
    assert rk.fuse(ranks, weights) == pytest.approx([0.625, 0.375])
    # Prompt 0 wins: copeland and elo predicted it, borda did not, win_rate had no opinion.
    new = rk.update_weights(weights, ranks, 0, 1, share=0.8)
    assert new["copeland"] == new["elo"] > new["win_rate"] > new["borda"]
    assert sum(new.values()) == pytest.approx(1.0)
    assert rk.update_weights(weights, ranks, 0, 1, share=0.5) == weights  # a tie teaches nothing


def test_double_thompson_prefers_the_condorcet_winner() -> None:
    strong = [[0.0, 40.0, 40.0], [2.0, 0.0, 20.0], [2.0, 20.0, 0.0]]
    rng = random.Random(0)
    pairs = [rk.double_thompson(strong, ALL, rng) for _ in range(200)]
    assert all(a != b and {a, b} <= set(ALL) for a, b in pairs)
    assert sum(a == 0 for a, _ in pairs) > 150
    again = [rk.double_thompson(strong, ALL, random.Random(0)) for _ in range(3)]
    assert len(set(again)) == 1  # seeded
    with pytest.raises(ValueError, match="two prompts"):
        rk.double_thompson(strong, [0], rng)


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
