"""Demos as chat turns: the prompt section, what the task model is sent, and fewshot's default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import reflex
from reflex import ConfigurationError, PromptOptimizer
from reflex.data.demos import (
    CHAT_DEMOS_HEADER,
    check_chat_demos,
    render_chat_demos,
    split_chat_demos,
)
from reflex.optimizer import prompt_spec
from reflex.run.evaluate import render_messages
from reflex.testing import FakeModel, FakeRequest
from reflex.types import Example

PAIRS = [("What is 80 plus 29?", "109"), ("What is  12\nplus 5?", "17")]
PROMPT = "Answer the question.\n\n" + render_chat_demos(PAIRS)


def test_the_section_round_trips_with_whitespace_collapsed() -> None:
    assert PROMPT.endswith(
        f"{CHAT_DEMOS_HEADER}\n\nInput: What is 80 plus 29?\nOutput: 109\n\n"
        "Input: What is 12 plus 5?\nOutput: 17"
    )
    system, pairs = split_chat_demos(PROMPT)
    assert system == "Answer the question."
    assert pairs == [("What is 80 plus 29?", "109"), ("What is 12 plus 5?", "17")]
    assert split_chat_demos("Answer.") == ("Answer.", [])


@pytest.mark.parametrize(
    "tail",
    [
        "",  # a header and nothing after it
        "Input: a\nOutput: b\nOutput: c",  # three lines in a block
        "Input: a\nOutput: b\n\nSome closing advice.",  # text after the demos
        "Output: b\nInput: a",  # order swapped
        "Input: a\nOutput: ",  # empty answer
    ],
)
def test_a_malformed_section_stays_system_text_and_is_refused_in_a_file(
    tail: str, tmp_path: Path
) -> None:
    prompt = f"Answer.\n\n{CHAT_DEMOS_HEADER}\n\n{tail}".rstrip()
    assert split_chat_demos(prompt) == (prompt, [])  # deterministic: sent as written
    problem = check_chat_demos(prompt)
    assert problem is not None and CHAT_DEMOS_HEADER in problem and "\n" not in problem
    path = tmp_path / "prompt.md"
    path.write_text(prompt, encoding="utf-8")
    with pytest.raises(ConfigurationError, match=rf"^{path}: the prompt is not usable: its "):
        prompt_spec(path)
    ok = tmp_path / "ok.md"
    ok.write_text(PROMPT, encoding="utf-8")
    assert prompt_spec(ok).render() == PROMPT


def test_the_header_must_be_a_line_of_its_own() -> None:
    inline = f"Answer. {CHAT_DEMOS_HEADER}\n\nInput: a\nOutput: b"
    assert split_chat_demos(inline) == (inline, []) and check_chat_demos(inline) is None


def test_messages_put_the_demos_as_turns_between_system_and_input() -> None:
    sent = reflex.prompt_messages(PROMPT, "What is 1 plus 1?")
    assert sent == [
        {"role": "system", "content": "Answer the question."},
        {"role": "user", "content": "What is 80 plus 29?"},
        {"role": "assistant", "content": "109"},
        {"role": "user", "content": "What is 12 plus 5?"},
        {"role": "assistant", "content": "17"},
        {"role": "user", "content": "What is 1 plus 1?"},
    ]
    example = Example(id="e", messages=({"role": "user", "content": "What is 1 plus 1?"},))
    assert render_messages(PROMPT, example) == sent  # the evaluator sends the same


def test_an_example_system_message_is_replaced_or_prepended_before_the_turns() -> None:
    convo = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]
    replaced = reflex.prompt_messages(PROMPT, convo)
    assert replaced[0] == {"role": "system", "content": "Answer the question."}
    assert [m["role"] for m in replaced] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert replaced[-1] == {"role": "user", "content": "2+2?"}
    prepended = reflex.prompt_messages(PROMPT, convo, mode="prepend")
    assert prepended[0]["content"] == "Answer the question.\n\nBe brief."
    assert prepended[1:] == replaced[1:]
    # a prompt without the section is sent exactly as before
    assert reflex.prompt_messages("Answer.", convo) == [
        {"role": "system", "content": "Answer."},
        {"role": "user", "content": "2+2?"},
    ]


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
