"""Judge reply parsing on a table of messy replies, rubric files and the verdict arithmetic."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from reflex.errors import ConfigurationError
from reflex.judging.judge import Criterion, LLMJudge, load_rubric, parse_grades
from reflex.judging.parse import JudgeParseError
from reflex.types import Example, ModelGradedMetric

TWO = ["accuracy", "tone"]

GOOD: list[tuple[str, list[str], dict[str, int]]] = [
    (
        '{"criteria": {"accuracy": {"grade": 4, "reason": "ok"}, "tone": {"grade": 5}}}',
        TWO,
        {"accuracy": 4, "tone": 5},
    ),
    (
        '```json\n{"criteria": {"accuracy": {"grade": 2}, "tone": {"grade": 3}}}\n```',
        TWO,
        {"accuracy": 2, "tone": 3},
    ),
    (
        'Sure! Here is my grading:\n{"accuracy": 3, "tone": 1}\nHope that helps.',
        TWO,
        {"accuracy": 3, "tone": 1},
    ),
    (
        "{'criteria': {'accuracy': {'grade': 5}, 'tone': {'grade': 4},}}",
        TWO,
        {"accuracy": 5, "tone": 4},
    ),
    (
        '{"criteria": [{"name": "Accuracy", "grade": "4/5"}, {"name": "TONE", "score": 2.0}]}',
        TWO,
        {"accuracy": 4, "tone": 2},
    ),
    ("Accuracy: 4/5\nTone = 3", TWO, {"accuracy": 4, "tone": 3}),
    ("**Accuracy**: **5**\n**Tone**: 2", TWO, {"accuracy": 5, "tone": 2}),
    ('{"grade": 4, "reason": "fine"}', ["rubric"], {"rubric": 4}),
    ("Score: 3", ["rubric"], {"rubric": 3}),
    ("4", ["rubric"], {"rubric": 4}),
    ("I'd give it a rating of 2.", ["rubric"], {"rubric": 2}),
    (
        '{"scores": {"instruction_following": 5}}',
        ["instruction following"],
        {"instruction following": 5},
    ),
    ("broken {json but then Accuracy: 2 and Tone: 5", TWO, {"accuracy": 2, "tone": 5}),
]

BAD: list[tuple[str, list[str], str]] = [
    ("", TWO, "empty"),
    ("The response is pretty good overall.", TWO, "no grade"),
    ('{"accuracy": 4}', TWO, "tone"),
    ('{"accuracy": 9, "tone": 3}', TWO, "outside 1..5"),
    ('{"accuracy": 3.5, "tone": 3}', TWO, "not an integer"),
    ('{"accuracy": "great", "tone": 3}', TWO, "no numeric grade"),
    ('{"accuracy": true, "tone": 3}', TWO, "no numeric grade"),
    ("Score: 0", ["rubric"], "outside"),
]


@pytest.mark.parametrize(("reply", "names", "expected"), GOOD)
def test_messy_replies_parse(reply: str, names: list[str], expected: dict[str, int]) -> None:
    grades = parse_grades(reply, names, 1, 5)
    assert {name: grade for name, (grade, _) in grades.items()} == expected


@pytest.mark.parametrize(("reply", "names", "why"), BAD)
def test_unusable_replies_raise(reply: str, names: list[str], why: str) -> None:
    with pytest.raises(JudgeParseError, match=why):
        parse_grades(reply, names, 1, 5)


def test_reasons_are_kept() -> None:
    reply = '{"criteria": {"accuracy": {"grade": 4, "reason": "misses  one\\nfact"}}}'
    assert parse_grades(reply, ["accuracy"], 1, 5) == {"accuracy": (4, "misses one fact")}


class Scripted:
    """A JudgeCall that replays replies in order and records the conversations it got."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.seen: list[list[dict[str, str]]] = []

    async def __call__(self, messages: Sequence[Mapping[str, str]]) -> str:
        self.seen.append([dict(m) for m in messages])
        return self.replies.pop(0)


def example(ideal: str | None = None) -> Example:
    return Example("e1", ({"role": "user", "content": "Summarise the memo."},), ideal=ideal)


def grade(judge: LLMJudge, call: Scripted, ideal: str | None = None) -> object:
    return asyncio.run(judge.ascore("the output", example(ideal), call))


def test_weights_gates_and_objectives() -> None:
    judge = LLMJudge(
        "fake/judge",
        criteria_list=[Criterion("accuracy", "facts right", weight=3.0, gate=3), "tone: polite"],
    )
    assert isinstance(judge, ModelGradedMetric)
    verdict = grade(judge, Scripted('{"accuracy": 5, "tone": 1}'))
    assert verdict.value == pytest.approx(0.75)  # (3*1 + 1*0) / 4
    assert verdict.objectives == {"accuracy": 1.0, "tone": 0.0}
    gated = grade(judge, Scripted('{"accuracy": 2, "tone": 5}'))
    assert gated.value == 0.0 and "minimum on accuracy" in (gated.feedback or "")


def test_unparseable_reply_is_retried_with_a_repair_turn() -> None:
    call = Scripted("Looks great to me!", '{"criteria": {"rubric": {"grade": 5}}}')
    verdict = grade(LLMJudge("fake/judge", criteria="Is it short?"), call)
    assert verdict.value == 1.0 and verdict.error is None
    assert len(call.seen) == 2
    assert call.seen[1][-2] == {"role": "assistant", "content": "Looks great to me!"}
    assert "could not be used" in call.seen[1][-1]["content"]


def test_still_unusable_is_a_failed_judgement_not_a_midpoint() -> None:
    call = Scripted("meh", "meh again", "still meh")
    verdict = grade(LLMJudge("fake/judge", criteria="Is it short?", parse_retries=2), call)
    assert verdict.error is not None and "failed judgement" in verdict.error
    assert len(call.seen) == 3


def test_reference_shown_only_when_allowed() -> None:
    call = Scripted("5")
    grade(LLMJudge("fake/judge", criteria="ok?"), call, ideal="REF-ANSWER")
    assert "REF-ANSWER" in call.seen[0][1]["content"]
    call = Scripted("5")
    grade(LLMJudge("fake/judge", criteria="ok?", use_reference="never"), call, ideal="REF-ANSWER")
    assert "REF-ANSWER" not in call.seen[0][1]["content"]
    assert LLMJudge("fake/judge", use_reference="always").requires_reference is True


def test_default_rubric_and_scale() -> None:
    judge = LLMJudge("fake/judge", scale=(0, 10))
    assert [c.name for c in judge.rubric.criteria] == ["correctness", "completeness", "clarity"]
    verdict = grade(judge, Scripted('{"correctness": 10, "completeness": 5, "clarity": 0}'))
    assert verdict.value == pytest.approx((2 * 1.0 + 0.5 + 0.0) / 4)


def test_rubric_files(tmp_path: Path) -> None:
    spec = {
        "scale": [1, 3],
        "criteria": [
            {"name": "safe", "description": "no harm", "gate": 2},
            {"name": "useful", "weight": 2},
        ],
    }
    path = tmp_path / "rubric.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    rubric = load_rubric(path)
    assert (rubric.low, rubric.high) == (1, 3)
    assert rubric.criteria[0] == Criterion("safe", "no harm", 1.0, 2)
    text = tmp_path / "rubric.md"
    text.write_text("Grade politeness.\n", encoding="utf-8")
    assert LLMJudge("fake/judge", criteria=str(text)).rubric.criteria[0].description == (
        "Grade politeness."
    )


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("{", "invalid JSON"),
        ('{"criteria": [{"nom": "x"}]}', "needs 'name'"),
        ('{"scale": [5, 1]}', "scale 5..1"),
        ('{"criteria": [{"name": "a", "gate": 9}]}', "outside the scale"),
    ],
)
def test_bad_rubric_files(tmp_path: Path, content: str, match: str) -> None:
    path = tmp_path / "rubric.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigurationError, match=match):
        load_rubric(path)


def test_bad_judge_options() -> None:
    with pytest.raises(ConfigurationError, match="not both"):
        LLMJudge("fake/judge", criteria="x", criteria_list=["y"])
    with pytest.raises(ConfigurationError, match="repeat"):
        LLMJudge("fake/judge", criteria_list=["a", "a"])
    with pytest.raises(ConfigurationError, match="provider/model"):
        LLMJudge("gpt4")
