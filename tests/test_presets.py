"""Budget presets (``--budget light|medium|heavy``): calls sized to the splits and the strategy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows, responder

from reflex import ConfigurationError, PromptOptimizer
from reflex.cli import main
from reflex.config import RunConfig
from reflex.run.presets import PRESET_CANDIDATES, resolve_preset, strategy_phases
from reflex.testing import FakeModel, RecordingCallback

START = "Classify the sentiment."


def _config(preset: str | None, strategy: str = "instructions", **more: Any) -> RunConfig:
    budget = {"preset": preset, **more.pop("budget", {})}
    more.setdefault("race", False)  # the unraced plan; a raced mipro round: test_mipro_finals.py
    return RunConfig(models=["fake/task"], strategy=strategy, budget=budget, **more)


@pytest.mark.parametrize(
    ("strategy", "options", "reasoning", "phases"),
    [
        ("instructions", {}, False, 1),
        ("iterative", {}, True, 1),
        ("auto", {}, False, 2),
        ("auto", {}, True, 3),
        ("auto", {"use_reasoning_model": False}, True, 2),
        ("sequence", {"steps": ["instructions", "fewshot", "iterative"]}, True, 3),
    ],
)
def test_a_strategy_s_phases(
    strategy: str, options: dict[str, object], reasoning: bool, phases: int
) -> None:
    assert strategy_phases(strategy, options, reasoning=reasoning) == phases


@pytest.mark.parametrize(
    ("preset", "val", "strategy", "calls"),
    [
        # fixed = preflight 10 + val + 2 x test 20; per candidate = val + batch 8
        ("light", 20, "instructions", 70 + 4 * 1 * 28),
        ("medium", 20, "instructions", 70 + 8 * 1 * 28),
        ("heavy", 20, "instructions", 70 + 20 * 1 * 28),
        ("medium", 100, "instructions", 150 + 8 * 1 * 108),
        ("medium", 20, "auto", 70 + 8 * 2 * 28),
        ("heavy", 100, "auto", 150 + 20 * 2 * 108),
        # mipro: a candidate is a round: 5 trials on 8 val rows, then 1 full val pass
        ("light", 20, "mipro", 70 + 4 * 1 * (5 * 8 + 20)),
        ("medium", 100, "mipro", 150 + 8 * 1 * (5 * 8 + 100)),
        ("medium", 6, "mipro", 56 + 8 * 1 * (5 * 6 + 6)),  # a minibatch is at most val
    ],
)
def test_presets_resolve_to_calls_for_the_val_size_and_strategy(
    preset: str, val: int, strategy: str, calls: int
) -> None:
    found = resolve_preset(_config(preset, strategy), train=60, val=val, test=20)
    assert found is not None and found.calls == calls
    assert found.candidates == PRESET_CANDIDATES[preset]
    assert found.formula().endswith(f"= {calls}")


def test_the_calls_grow_with_the_val_split_and_the_models() -> None:
    one = resolve_preset(_config("medium"), train=60, val=20, test=20)
    bigger = resolve_preset(_config("medium"), train=60, val=40, test=20)
    budget = {"preset": "medium"}
    two = RunConfig(models=["fake/a", "fake/b"], strategy="instructions", budget=budget)
    doubled = resolve_preset(two, train=60, val=20, test=20)
    assert one is not None and bigger is not None and doubled is not None
    assert bigger.calls > one.calls and doubled.calls == 2 * one.calls


def test_without_val_rows_a_candidate_costs_its_minibatch() -> None:
    found = resolve_preset(_config("light"), train=60, val=0, test=20)
    assert found is not None and found.per_candidate == 8  # batch_size


def test_no_preset_resolves_to_nothing() -> None:
    assert resolve_preset(_config(None), train=60, val=20, test=20) is None


def test_an_unknown_preset_is_one_line_naming_the_choices() -> None:
    with pytest.raises(ConfigurationError, match=r"preset='huge'.*light.*medium.*heavy"):
        PromptOptimizer().set_budget("huge")  # type: ignore[arg-type]


def _builder(tmp_path: Path) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows(50))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("instructions")
        .set_run_dir(tmp_path)
        .configure(early_stopping_patience=None)
    )


def _events(run_dir: str | None, kind: str) -> list[dict[str, Any]]:
    lines = Path(str(run_dir), "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["type"] == kind]


def test_a_run_with_a_preset_spends_within_its_calls(tmp_path: Path) -> None:
    FakeModel(responder).install()
    recorder = RecordingCallback()
    result = _builder(tmp_path).set_budget("light").run(START, callbacks=[recorder])
    # 50 rows: train 30, val 10, test 10 -> 10 + 10 + 20 + 4 x (10 + 8) = 112
    [event] = _events(result.run_dir, "budget_preset")
    assert event["preset"] == "light" and event["calls"] == 112 and event["max_calls"] == 112
    assert event["overridden"] is False
    [(config, _)] = [args for name, args in recorder.calls if name == "on_run_start"]
    assert config.budget.max_calls == 112  # the session's budget is the resolved one
    assert result.usage["metric_calls"] <= 112
    saved = json.loads(Path(str(result.run_dir), "config.json").read_text())
    assert saved["budget"]["preset"] == "light" and saved["budget"]["max_calls"] is None


def test_an_explicit_max_calls_wins_over_the_preset(tmp_path: Path) -> None:
    FakeModel(responder).install()
    recorder = RecordingCallback()
    result = _builder(tmp_path).set_budget("heavy", max_calls=60).run(START, callbacks=[recorder])
    [event] = _events(result.run_dir, "budget_preset")
    assert event["overridden"] is True and event["max_calls"] == 60 and event["calls"] > 60
    [(config, _)] = [args for name, args in recorder.calls if name == "on_run_start"]
    assert config.budget.max_calls == 60
    assert result.usage["metric_calls"] <= 60


def test_the_cli_budget_option_and_max_calls_winning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in make_rows(50)))
    (tmp_path / "p.md").write_text(START + "\n")
    fake = FakeModel(responder).install()
    args = ["optimize", "d.jsonl", "p.md", "-m", "fake/task", "-s", "instructions", "--dry-run"]
    assert _exit(main, [*args, "--budget", "medium", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["budget"]["max_calls"] == plan["budget"]["preset_calls"] == 40 + 8 * 18
    assert _exit(main, [*args, "--budget", "medium", "--max-calls", "90", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["budget"]["max_calls"] == 90 and plan["budget"]["overridden"] is True
    assert _exit(main, [*args, "--budget", "huge"]) == 2
    assert "'huge' is not one of" in capsys.readouterr().err
    assert fake.requests == []


def _exit(command: Any, argv: list[str]) -> object:
    with pytest.raises(SystemExit) as exc:
        command(argv)
    return exc.value.code


def test_mipro_s_round_follows_its_options() -> None:
    options = {"minibatch_size": 4, "full_eval_every": 3, "full_eval_top": 2}
    found = resolve_preset(
        _config("light", "mipro", strategy_options=options), train=60, val=20, test=20
    )
    assert found is not None and found.per_candidate == 3 * 4 + 2 * 20
