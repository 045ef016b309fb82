"""Candidate screening (reflex.run.screening): the format names a prompt asks for, answers that
break the format, and the prompt-length guard (--max-prompt-tokens)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import BETTER, make_rows, responder
from test_format_guard import FORMAT, SCHEMA, SEED

from reflex import ConfigurationError, PromptOptimizer
from reflex.cli import main
from reflex.config import RunConfig
from reflex.models.tokens import count_tokens
from reflex.result import EvalSnapshot, Sample
from reflex.run.screening import CandidateScreen, format_names, prompt_length_problem
from reflex.testing import FakeModel

START = "Classify the sentiment."
LIMIT = count_tokens(START) + 2  # the start fits; BETTER (START + "Answer with one word.") not


def _builder(tmp_path: Path) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows(40))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("iterative")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path)
        .configure(max_iterations=2, early_stopping_patience=None)
    )


def test_the_problem_names_the_count_and_the_limit() -> None:
    assert prompt_length_problem(None, BETTER, "x") is None
    assert prompt_length_problem(count_tokens(BETTER), BETTER, "x") is None
    problem = prompt_length_problem(LIMIT, BETTER, "the candidate")
    assert problem is not None
    assert f"the candidate is {count_tokens(BETTER)} tokens" in problem
    assert f"over --max-prompt-tokens {LIMIT}" in problem


def test_without_the_guard_the_longer_candidate_wins(tmp_path: Path) -> None:
    FakeModel(responder).install()
    result = _builder(tmp_path).run(START)
    assert result.best_prompt == BETTER


def test_the_longer_candidate_is_refused_at_zero_calls_with_its_reason(tmp_path: Path) -> None:
    fake = FakeModel(responder).install()
    result = _builder(tmp_path).set_max_prompt_tokens(LIMIT).run(START)
    assert result.best_prompt == START
    first = result.iterations[0]
    assert first.system_prompt == BETTER and first.rejected is not None
    assert f"is {count_tokens(BETTER)} tokens" in first.rejected
    assert "over --max-prompt-tokens" in first.rejected
    assert all(not r.accepted and r.val_score is None for r in result.iterations)
    assert not [r for r in fake.requests if r.model == "fake/task" and BETTER in r.system]
    [proposal, *_] = result.failed_proposals
    assert proposal["purpose"] == "prompt length guard"
    events = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    iterations = [e for e in map(json.loads, events) if e["type"] == "iteration"]
    assert "over --max-prompt-tokens" in iterations[0]["rejected"]  # the record, as logged


def test_a_starting_prompt_over_the_limit_is_refused_before_any_call(tmp_path: Path) -> None:
    fake = FakeModel(responder).install()
    with pytest.raises(ConfigurationError, match=r"the starting prompt is .* tokens"):
        _builder(tmp_path).set_max_prompt_tokens(2).run(START)
    assert fake.requests == [] and not (tmp_path / "runs").exists()


def test_the_cli_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in make_rows(40)))
    (tmp_path / "p.md").write_text(START + "\n")
    fake = FakeModel(responder).install()
    with pytest.raises(SystemExit) as exc:
        main(["optimize", "d.jsonl", "p.md", "-m", "fake/task", "--max-prompt-tokens", "1"])
    assert exc.value.code == 2 and "over --max-prompt-tokens 1" in capsys.readouterr().err
    assert fake.requests == []


def _snapshot(objectives: list[dict[str, float]], error: str | None = None) -> EvalSnapshot:
    samples = tuple(
        Sample(f"r{i}", "m", "{}", 0.5, objectives=o, error=error) for i, o in enumerate(objectives)
    )
    return EvalSnapshot("p", "train", 0.5, {}, samples=samples)


def _screen(**settings: Any) -> CandidateScreen:
    config = RunConfig(models=["openai/m"], response_format=FORMAT, **settings)
    return CandidateScreen(
        config, train=[], held_out={}, seed_texts=[SEED], initial_val=None, initial_prompt=SEED
    )


def test_format_names_are_the_schema_fields_the_prompt_names() -> None:
    assert format_names(FORMAT, SEED) == ["value", "unit"]
    assert format_names(FORMAT, "Give the units as JSON.") == []  # 'units' is not 'unit'
    assert format_names({"type": "json_object"}, SEED) == []
    nested = {
        "type": "json_schema",
        "json_schema": {
            "name": "q",
            "schema": {
                "type": "object",
                "properties": {"quantities": {"type": "array", "items": SCHEMA}},
            },
        },
    }
    assert format_names(nested, "List quantities, each with value and unit.") == [
        "quantities",
        "value",
        "unit",
    ]


def test_a_candidate_that_drops_a_named_field_is_refused_with_the_name() -> None:
    screen = _screen()
    assert screen.refusal(SEED + " Be exact.") is None
    assert _screen(format_guard=False).refusal("Extract the length.") is None  # switched off
    guard, reason = screen.refusal("Extract the length as JSON with the field value.") or ("", "")
    assert guard == "format instructions guard"
    assert reason.startswith(
        "the revised prompt dropped the output-format instructions: no longer names 'unit'"
    )


def test_the_format_guard_counts_broken_answers_on_the_shared_rows() -> None:
    screen = _screen()
    ok = {"json_match.parse": 1.0, "json_match.schema": 1.0}
    invalid = {"json_match.parse": 1.0, "json_match.schema": 0.0}
    unparsed = {"json_match.parse": 0.0}
    incumbent = _snapshot([ok, invalid, ok])
    assert screen.format_screen(_snapshot([ok, invalid, ok]), incumbent) is None  # as often
    assert screen.format_screen(_snapshot([ok, ok, ok]), incumbent) is None
    reason = screen.format_screen(_snapshot([unparsed, invalid, ok]), incumbent)
    assert (
        reason is not None and "2 of 3 answers" in reason and "1 of 3 for the incumbent" in reason
    )
    calls = _snapshot([{"tool_call.format": 0.0}] * 2)
    assert screen.format_screen(calls, _snapshot([{"tool_call.format": 1.0}] * 2)) is not None
    assert screen.format_screen(_snapshot([{}] * 3), _snapshot([{}] * 3)) is None  # no format
    assert screen.format_screen(_snapshot([unparsed] * 3, "refused"), incumbent) is None
    assert _screen(format_guard=False).format_screen(calls, _snapshot([{}] * 2)) is None
