"""mipro: TPE over instructions x demo sets x demo count on val minibatches; only full val
selects (the prompt-sensitive task and builder: tests/test_reasoning_free.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from test_reasoning_free import START, _index, _lists_labels, make_rows
from test_resume import START as KILLED_START
from test_resume import comparable, run_killed

from reflex import ConfigurationError, OptimizationResult, PromptOptimizer
from reflex.cli import main
from reflex.run.presets import MIPRO_ROUND
from reflex.run.resume import list_runs
from reflex.testing import FakeModel, FakeRequest
from reflex_strategies.mipro import MiproOptions

ROWS = make_rows(120)  # val and test: 24 rows each
IDEAL = {row["input"]: row["ideal"] for row in ROWS}
BEST_DEMOS = 2


def _demo_turns(request: FakeRequest) -> int:
    return sum(1 for m in request.messages if m.get("role") == "assistant")


def one_best(request: FakeRequest) -> bool:
    """Right on every row only with the label list and exactly two demos; the label list alone
    is right on half the rows (the task's baseline: a quarter)."""
    labels = _lists_labels(request.system)
    if labels and _demo_turns(request) == BEST_DEMOS:
        return True
    return labels and _index(request) % 2 == 0


def task(request: FakeRequest) -> str:
    """The task model: the label when ``one_best``, else a sentence around it."""
    ideal = IDEAL[request.user]
    if one_best(request) or _index(request) % 4 == 0:  # the starting prompt: a quarter right
        return ideal
    return f"This text is about {ideal}."


def builder(run_dir: Path, **options: Any) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(ROWS)
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("mipro", **options)
        .set_run_dir(run_dir)
        .set_race(False)  # one finalist per round measured on val; raced: test_mipro_finals.py
    )


def trials(result: OptimizationResult) -> list[dict[str, Any]]:
    return [e for r in result.iterations for e in r.lineage if e["type"] == "trial"]


def events(result: OptimizationResult, kind: str) -> list[dict[str, Any]]:
    lines = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["type"] == kind]


def test_only_a_full_val_evaluation_makes_the_best_prompt(tmp_path: Path) -> None:
    fake = FakeModel(task).install()
    result = builder(tmp_path).configure(max_iterations=24).run(START)
    assert not fake.calls_to("fake/reasoner")
    for record in result.iterations:
        [entry] = record.lineage
        if entry["type"] == "trial":  # scored on a minibatch only: never measured, never best
            assert record.val_score is None and not record.is_best
            assert record.rejected is not None and "only full val selects" in record.rejected
            assert entry["minibatch_rows"] == 8 and entry["split"] == "val"
            assert {"instruction", "demo_set", "demos", "minibatch_score"} <= set(entry)
        else:
            assert entry["type"] == "full_eval" and record.val_score is not None
            assert record.evidence is not None  # judged by the --accept gate
    perfect = [t for t in trials(result) if t["minibatch_score"] == 1.0]
    assert perfect  # a perfect minibatch alone did not make a trial the best (above)
    [best] = [r for r in result.iterations if r.is_best]
    assert best.lineage[0]["type"] == "full_eval" and best.lineage[0]["demos"] == BEST_DEMOS
    assert result.best_prompt == best.system_prompt == result.final.system_prompt
    assert result.best_score_val == best.val_score == 1.0
    assert result.final is not None and result.final.mean_score == 1.0
    # Early stopping (patience 3 by default) ends a round, not the search; the last iteration
    # is kept for a full evaluation, which nothing ahead of the best needed.
    assert len(result.iterations) == 23
    assert [p["round"] for p in result.phase_history] == [1, 2, 3, 4, 5]
    assert [p["trials"] for p in result.phase_history] == [5, 5, 5, 5, 2]


def test_tpe_concentrates_trials_on_the_best_combination(tmp_path: Path) -> None:
    FakeModel(task).install()
    result = builder(tmp_path, startup_trials=6).configure(max_iterations=48).run(START)
    [space] = events(result, "mipro_space")
    labelled = {
        i for i, edit in enumerate(space["instructions"]) if "label set" in edit
    }  # the instructions that list the labels
    assert len(labelled) == 3 and len(space["instructions"]) == 5
    later = trials(result)[6:]
    hits = [t for t in later if t["instruction"] in labelled and t["demos"] == BEST_DEMOS]
    # Drawn at random, 3/5 x 1/4 = 15% of trials would hit it (8-15% measured with a random
    # suggest in its place, seeds 0-3); TPE spends 40-46% of them there.
    assert len(later) >= 30 and len(hits) / len(later) > 0.3


def test_a_seeded_run_is_reproducible(tmp_path: Path) -> None:
    FakeModel(task).install()

    def chosen(run: str, seed: int) -> list[tuple[str, Any]]:
        result = builder(tmp_path / run).set_seed(seed).configure(max_iterations=12).run(START)
        return [(r.system_prompt, r.lineage) for r in result.iterations]

    first = chosen("a", 0)
    assert chosen("b", 0) == first
    assert chosen("c", 1) != first  # the seed does steer the search


def test_demos_come_from_train_and_the_counts_searched(tmp_path: Path) -> None:
    FakeModel(task).install()
    result = (
        builder(tmp_path, num_demo_sets=3, demo_counts=[0, 2])
        .configure(max_iterations=12)
        .run(START)
    )
    [space] = events(result, "mipro_space")
    splits = json.loads(Path(str(result.run_dir), "splits.json").read_text())
    assert len(space["demo_sets"]) == 3 and space["demo_counts"] == [0, 2]
    assert all(set(ids) <= set(splits["train"]) and len(ids) == 2 for ids in space["demo_sets"])
    assert {t["demos"] for t in trials(result)} <= {0, 2}


def test_the_call_budget_is_respected(tmp_path: Path) -> None:
    FakeModel(task).install()
    result = builder(tmp_path).set_budget(max_calls=200).run(START)
    assert result.usage["metric_calls"] <= 200
    assert any(e["type"] == "full_eval" for r in result.iterations for e in r.lineage)
    assert result.final is not None  # the final test measurement was paid inside the budget


def test_the_reasoning_model_writes_more_instructions(tmp_path: Path) -> None:
    written = f"{START} Reply with politics, sports or tech only."

    def answer(request: FakeRequest) -> str:
        if request.model.startswith("fake/reasoner"):
            return f"<prompt>{written}</prompt><prompt>{START} Be brief.</prompt>"
        return task(request)

    fake = FakeModel(answer).install()
    result = (
        builder(tmp_path, proposed_instructions=2, max_instructions=7, startup_trials=6)
        .set_reasoning_model("fake/reasoner")
        .configure(max_iterations=6)
        .run(START)
    )
    [space] = events(result, "mipro_space")
    [asked] = fake.calls_to("fake/reasoner")
    assert "the answer is one of 3 labels: politics, sports, tech" in asked.user
    assert space["instructions"][-2:] == [
        "reasoning model's instruction 1",
        "reasoning model's instruction 2",
    ]
    assert len(space["instructions"]) == 7  # the starting prompt, 4 derived, 2 written
    assert any(t["instruction"] >= 5 for t in trials(result))  # and they are searched


def test_without_optuna_mipro_fails_at_zero_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeModel(task).install()
    monkeypatch.setitem(sys.modules, "optuna", None)  # what an absent package looks like
    with pytest.raises(ConfigurationError, match=r"pip install 'aevyra-reflex\[mipro\]'"):
        builder(tmp_path / "py").run(START)
    monkeypatch.chdir(tmp_path)
    Path("d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    Path("p.md").write_text(START + "\n")
    with pytest.raises(SystemExit) as exc:
        main(["optimize", "d.jsonl", "p.md", "-m", "fake/task", "-s", "mipro"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'aevyra-reflex[mipro]'" in err
    assert fake.requests == []


def test_the_dry_run_prints_the_rounds_at_zero_calls(tmp_path: Path) -> None:
    fake = FakeModel(task).install()
    plan = builder(tmp_path).set_budget("light").run(START, dry_run=True)
    assert fake.requests == []
    [note] = [line for line in plan.lines() if line.startswith("note      mipro:")]
    assert "rounds of 5 TPE trials on 8 val rows" in note and "all 24 val rows" in note
    # light: 4 rounds of 5 x 8 minibatch rows and one full val pass (24) each.
    assert plan.budget["preset_calls"] == 10 + 24 + 2 * 24 + 4 * (5 * 8 + 24)
    assert plan.candidates == 4 and plan.calls == plan.budget["preset_calls"]


def test_the_presets_know_the_strategy_defaults() -> None:
    defaults = MiproOptions()
    assert {name: getattr(defaults, name) for name in MIPRO_ROUND} == dict(MIPRO_ROUND)


def test_a_run_killed_mid_search_resumes_to_the_same_result(tmp_path: Path) -> None:
    # Past TPE's startup trials, across full evaluations: the sampler is told the replayed
    # trials, so the resumed run asks what the uninterrupted one asked.
    def build(run_dir: Path) -> PromptOptimizer:
        return builder(run_dir, startup_trials=2, full_eval_every=3).configure(
            max_iterations=16, max_workers=2
        )

    reference = FakeModel(task).install()
    expected = build(tmp_path / "ref").run(KILLED_START)  # the prompt run_killed runs
    total = len(reference.requests)
    assert sum(1 for t in trials(expected) if t["trial"] > 2) >= 8
    for kill_at in (total // 3, 2 * total // 3):
        run_dir = tmp_path / f"kill{kill_at}"
        run_killed(run_dir, "mipro", kill_at, build=build, answer=task)
        assert list_runs(run_dir)[0].status == "interrupted"
        FakeModel(task).install()
        resumed = build(run_dir).run(KILLED_START, resume=True)
        assert comparable(resumed) == comparable(expected), f"kill at call {kill_at}"
