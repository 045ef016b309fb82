"""Demos as chat turns end to end: fewshot and auto send them by default, the CLI says how to
deploy them (the section itself: tests/test_demos.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import reflex
from reflex import PromptOptimizer
from reflex.data.demos import (
    CHAT_DEMOS_HEADER,
    split_chat_demos,
)
from reflex.testing import FakeModel, FakeRequest

ROWS = [
    {"id": f"r{i:02d}", "input": f"What is {i} plus {i}?", "ideal": str(2 * i)} for i in range(40)
]


def _answers_like_the_demos(request: FakeRequest) -> str:
    """Right only when the demos came as turns: in-prompt demos get the label copied."""
    answer = str(2 * int(request.user.split()[2]))
    if any(m.get("role") == "assistant" for m in request.messages):
        return answer
    return f"Output: {answer}" if "Output:" in request.system else "I think it is " + answer


def _run(run_dir: Path, strategy: str, **options: object) -> reflex.OptimizationResult:
    return (
        PromptOptimizer()
        .set_dataset(ROWS)
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy(strategy, **options)
        .set_run_dir(run_dir)
        .run("Answer the question.")
    )


def _fewshot(tmp_path: Path, **options: object) -> reflex.OptimizationResult:
    return _run(tmp_path, "fewshot", demo_source="labels", **options)


def test_fewshot_sends_its_demos_as_chat_turns_by_default(tmp_path: Path) -> None:
    fake = FakeModel(_answers_like_the_demos).install()
    result = _fewshot(tmp_path)
    assert result.final is not None and result.final.mean_score == 1.0
    assert CHAT_DEMOS_HEADER in result.best_prompt
    system, pairs = split_chat_demos(result.best_prompt)
    assert system == "Answer the question." and pairs
    shown = [r for r in fake.requests if any(m.get("role") == "assistant" for m in r.messages)]
    assert shown and all(r.system == "Answer the question." for r in shown)
    # the prompt we save is the prompt we scored: the final measured it, result.json keeps it
    assert result.final.system_prompt == result.best_prompt
    saved = json.loads(Path(str(result.run_dir), "result.json").read_text(encoding="utf-8"))
    assert saved["best_prompt"] == result.best_prompt


def test_fewshot_can_keep_demos_in_the_system_prompt(tmp_path: Path) -> None:
    FakeModel(_answers_like_the_demos).install()
    result = _fewshot(tmp_path, demo_format="system")
    assert result.final is not None and result.final.mean_score == 0.0
    assert result.best_prompt == "Answer the question."  # demos never helped: zero-shot kept
    assert all(
        "\nExamples:\n" in r.system_prompt and CHAT_DEMOS_HEADER not in r.system_prompt
        for r in result.iterations
    )


def test_auto_passes_the_demo_format_to_its_fewshot_phase(tmp_path: Path) -> None:
    FakeModel(_answers_like_the_demos).install()
    turns = _run(tmp_path / "turns", "auto")
    assert CHAT_DEMOS_HEADER in turns.best_prompt
    assert turns.final is not None and turns.final.mean_score == 1.0
    system = _run(tmp_path / "system", "auto", fewshot={"demo_format": "system"})
    fewshot = [r for r in system.iterations if r.phase == "fewshot"]
    assert fewshot and all("\nExamples:\n" in r.system_prompt for r in fewshot)
    assert CHAT_DEMOS_HEADER not in system.best_prompt


def test_the_cli_says_how_to_deploy_a_prompt_with_chat_turn_demos(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from reflex.cli import main

    FakeModel(_answers_like_the_demos).install()
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    prompt, out = tmp_path / "prompt.md", tmp_path / "best.md"
    prompt.write_text("Answer the question.\n", encoding="utf-8")
    args = ["optimize", str(data), str(prompt), "-m", "fake/task", "-s", "fewshot"]
    args += ["--run-dir", str(tmp_path / "runs"), "-o", str(out)]
    with pytest.raises(SystemExit) as done:
        main(args)
    assert done.value.code in (0, None)
    saved = out.read_text(encoding="utf-8").strip()
    pairs = split_chat_demos(saved)[1]
    assert pairs
    err = capsys.readouterr().err
    assert f"note: {out} ends with {len(pairs)} examples sent as chat turns" in err
    assert "reflex.prompt_messages(prompt, input)" in err
