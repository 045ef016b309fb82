"""The reasoning-model helpers (reflex/judging/reasoning.py): the templates and their overrides,
and a proposal read from the answer (tags, JSON or a fenced block) or refused with the reason.
(A proposal that breaks a chat template or a tools section: tests/test_templates.py and
tests/test_tool_text.py.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reflex.errors import ConfigurationError
from reflex.judging.reasoning import (
    ProposalError,
    parse_prompts,
    parse_proposal,
    render,
    reset_templates,
    set_template,
    tagged,
    template,
    template_names,
)

NAME = "iterative.brief"


@pytest.fixture(autouse=True)
def _no_process_overrides() -> Iterator[None]:
    reset_templates()
    yield
    reset_templates()


def test_a_run_s_override_wins_over_the_process_s_over_the_default() -> None:
    assert template_names() == sorted(template_names()) and NAME in template_names()
    default = template(NAME)
    set_template(NAME, "process {current}")
    assert template(NAME) == "process {current}"
    assert template(NAME, {NAME: "run {current}"}) == "run {current}"
    reset_templates()
    assert template(NAME) == default


def test_unknown_or_empty_templates_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="unknown reasoning template 'nope'; known: gepa"):
        template("nope")
    with pytest.raises(ConfigurationError, match="is empty"):
        set_template(NAME, "  ")


def test_render_fills_the_fields_it_is_given_and_keeps_the_others() -> None:
    text = render(NAME, {NAME: "Now: {current} ({score}); {unknown}"}, current="p", score=0.5)
    assert text == "Now: p (0.5); {unknown}"


def test_a_tag_s_last_occurrence_is_read_even_unclosed() -> None:
    assert tagged("<prompt>a</prompt> then <PROMPT> b </PROMPT>", "prompt") == "b"
    assert tagged("<prompt>\n unfinished", "prompt") == "unfinished"
    assert tagged("no tags", "prompt") is None


def test_a_proposal_is_read_from_tags_json_or_a_fenced_block() -> None:
    answer = "<diagnosis>too long</diagnosis><edit>cut</edit><prompt>Be brief.</prompt>"
    proposal = parse_proposal(answer, current="Be thorough.")
    assert (proposal.prompt, proposal.diagnosis, proposal.edit) == ("Be brief.", "too long", "cut")
    as_json = parse_proposal('{"prompt": "Be brief.", "diagnosis": "d"}', current="x")
    assert (as_json.prompt, as_json.reasoning) == ("Be brief.", "d")
    fenced = parse_proposal("Here:\n```text\nBe brief.\n```", current="x")
    assert fenced.prompt == "Be brief." and fenced.reasoning == fenced.answer.strip()


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("I would change nothing.", "no revised prompt found"),
        ("<prompt>Be thorough.</prompt>", "identical to the current one"),
        ("<prompt>Tried before.</prompt>", "repeats one that was already tried"),
    ],
)
def test_an_unusable_proposal_says_why(answer: str, reason: str) -> None:
    with pytest.raises(ProposalError, match=reason):
        parse_proposal(answer, current="Be thorough.", forbidden=["Tried before."])


def test_several_prompts_are_read_distinct_and_new() -> None:
    answer = "<prompt>A</prompt><prompt>B</prompt><prompt> A </prompt><prompt>C</prompt>"
    assert parse_prompts(answer, exclude=["C"]) == ["A", "B"]
    with pytest.raises(ProposalError, match="no new prompt found"):
        parse_prompts(answer, exclude=["A", "B", "C"])
