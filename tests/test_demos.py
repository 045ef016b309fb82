"""Demos as chat turns in a prompt: the section, its checks, and the messages it becomes."""

from __future__ import annotations

from pathlib import Path

import pytest

import reflex
from reflex import ConfigurationError
from reflex.data.demos import (
    CHAT_DEMOS_HEADER,
    check_chat_demos,
    render_chat_demos,
    split_chat_demos,
)
from reflex.optimizer import prompt_spec
from reflex.run.evaluate import render_messages
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
