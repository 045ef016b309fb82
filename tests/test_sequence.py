"""A user's own sequence (``-s instructions,fewshot,iterative``): strategies/sequence.py and
reflex/run/sequence.py. Resume after SIGKILL: tests/test_resume.py runs it like every strategy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_rows, responder

from reflex import ConfigurationError, PluginError, PromptOptimizer
from reflex.cli import main
from reflex.run.sequence import sequence_setting
from reflex.testing import FakeModel

START = "Classify the sentiment."
STEPS = ["instructions", "fewshot", "iterative"]


def _builder(tmp_path: Path, strategy: str = ",".join(STEPS), **options: object) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows(60))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy(strategy, **options)
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path)
        .configure(max_iterations=9, early_stopping_patience=None)
        .set_race(False)  # the phases' own iteration counts are under test, not racing's
    )


def test_a_list_of_names_is_the_sequence_strategy() -> None:
    assert sequence_setting("a", {"x": 1}) == ("a", {"x": 1})
    assert sequence_setting("instructions, fewshot", {}) == (
        "sequence",
        {"steps": ["instructions", "fewshot"]},
    )
    steps = sequence_setting("instructions+iterative", {})[1]["steps"]
    assert steps == ["instructions", "iterative"]
    with pytest.raises(PluginError, match="unknown strategy 'nope'"):
        sequence_setting("instructions,nope", {})
    with pytest.raises(ConfigurationError, match="a step has no name"):
        sequence_setting("instructions,,fewshot", {})


def test_the_steps_run_as_phases_in_order(tmp_path: Path) -> None:
    FakeModel(responder).install()
    result = _builder(tmp_path).run(START)
    assert result.strategy == "sequence"
    assert [p["phase"] for p in result.phase_history] == STEPS
    phases = [record.phase for record in result.iterations]
    assert phases == sorted(phases, key=STEPS.index)  # never back to an earlier step
    assert [p["iterations"] for p in result.phase_history] == [3, 3, 3]
    assert result.best_score_val == 1.0  # iterative, last, found the keyword from the best
    config = json.loads(Path(str(result.run_dir), "config.json").read_text())
    assert config["strategy"] == "sequence"
    assert config["strategy_options"] == {"steps": STEPS}


def test_a_step_s_unused_iterations_go_to_the_next_ones(tmp_path: Path) -> None:
    FakeModel(responder).install()
    options = {"options": {"instructions": {"max_candidates": 1}}}
    result = _builder(tmp_path, **options).run(START)
    used = {p["phase"]: p["iterations"] for p in result.phase_history}
    assert used["instructions"] == 1
    assert used["fewshot"] == (9 - 1) // 2 and used["iterative"] == 9 - 1 - used["fewshot"]


def test_one_call_budget_is_shared_by_every_step(tmp_path: Path) -> None:
    FakeModel(responder).install()
    result = _builder(tmp_path).configure(max_iterations=None).set_budget(max_calls=300).run(START)
    assert result.usage["metric_calls"] <= 300
    assert [p["phase"] for p in result.phase_history] == STEPS  # each step had its share
    assert all(p["iterations"] >= 1 for p in result.phase_history)


def test_bad_steps_are_refused_before_any_call(tmp_path: Path) -> None:
    fake = FakeModel(responder).install()
    no_reasoner = (
        PromptOptimizer()
        .set_dataset(make_rows(60))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("instructions,iterative")
        .set_run_dir(tmp_path)
    )
    with pytest.raises(ConfigurationError, match="step 'iterative' needs a reasoning model"):
        no_reasoner.run(START)
    with pytest.raises(ConfigurationError, match="runs other strategies itself"):
        _builder(tmp_path, "instructions,auto").run(START)
    with pytest.raises(ConfigurationError, match="'mipro' runs its own phases"):
        _builder(tmp_path, "instructions,mipro").run(START)  # its rounds would drop the cap
    with pytest.raises(ConfigurationError, match="option 'nope'"):
        _builder(tmp_path, options={"fewshot": {"nope": 1}}).run(START)
    with pytest.raises(ConfigurationError, match="'pdo', which is not a step"):
        _builder(tmp_path, options={"pdo": {}}).run(START)
    assert fake.requests == [] and not (tmp_path / "runs").exists()


def test_the_cli_runs_a_sequence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in make_rows(60)))
    (tmp_path / "p.md").write_text(START + "\n")
    FakeModel(responder).install()
    argv = [
        "optimize",
        "d.jsonl",
        "p.md",
        "-m",
        "fake/task",
        "-s",
        "instructions,fewshot",
        "--no-race",
    ]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--max-iterations", "4", "--results-json", "out.json"])
    assert exc.value.code in (0, None)
    result = json.loads((tmp_path / "out.json").read_text())
    assert [p["phase"] for p in result["phase_history"]] == ["instructions", "fewshot"]
