"""Pairwise judging: parsing, position bias, and pdo duels on label-free runs with a judge."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import KEYWORD, LABELS, make_rows, responder

from reflex import OptimizationResult, PromptOptimizer
from reflex.judging.judge import LLMJudge
from reflex.judging.pairwise import PairwiseParseError, compare_all, parse_preference
from reflex.testing import FakeModel, FakeRequest
from reflex.types import Example

START = "Classify the sentiment."
PAIRWISE = "two responses, A and B"  # in the pairwise system template


def first_user(request: FakeRequest) -> str:
    return next(m["content"] for m in request.messages if m["role"] == "user")


def grade(request: FakeRequest) -> str:
    """The absolute judge: 5 for a one-word label, 2 otherwise."""
    found = re.search(r"## Response\n(.*?)\n\n## Criteria", first_user(request), re.DOTALL)
    assert found is not None
    value = 5 if found.group(1).strip() in LABELS else 2
    names = re.findall(r"^- (\w+):", first_user(request).split("## Criteria")[1], re.MULTILINE)
    return json.dumps({"criteria": {n: {"grade": value, "reason": "ok"} for n in names}})


def prefers_one_word(request: FakeRequest) -> str:
    """The pairwise judge: prefers the one-word answer, else a tie."""
    found = re.search(
        r"## Response A\n(.*?)\n\n## Response B\n(.*?)\n\n", first_user(request), re.S
    )
    assert found is not None
    a, b = (found.group(k).strip() in LABELS for k in (1, 2))
    return "<answer>A</answer>" if a and not b else "<answer>B</answer>" if b and not a else "tie"


def scripted(pairwise: Callable[[FakeRequest], str]) -> Callable[[FakeRequest], str]:
    def answer(request: FakeRequest) -> str:
        if request.model == "fake/judge":
            return pairwise(request) if PAIRWISE in request.system else grade(request)
        if request.model == "fake/reasoner":  # a pool with the keyword, mutants of it
            return f"<prompt>{START} {KEYWORD}</prompt>\n<prompt>{START} Be kind.</prompt>"
        return responder(request)

    return answer


def label_free(n: int = 40) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k != "ideal"} for row in make_rows(n)]


def run(tmp_path: Path, rows: list[dict[str, Any]], *metrics: Any) -> OptimizationResult:
    builder = PromptOptimizer().set_dataset(rows).add_provider("fake", "task")
    for metric in metrics:
        builder = builder.add_metric(metric)
    return (
        builder.set_strategy("pdo", pool_size=3, generated=2, mutate_every=0, duel_rows=4)
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path)
        .configure(max_iterations=2, early_stopping_patience=None, batch_size=4)
        .run(START)
    )


def judge() -> LLMJudge:
    return LLMJudge("fake/judge", criteria="Is the answer a single sentiment word?")


def events(result: OptimizationResult, kind: str) -> list[dict[str, Any]]:
    lines = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["type"] == kind]


def pairwise_calls(fake: FakeModel) -> list[FakeRequest]:
    return [r for r in fake.calls_to("fake/judge") if PAIRWISE in r.system]


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [("A", "A"), ("<answer>B</answer>", "B"), ("why...\n<answer>tie</answer>", "tie"),
     ("Answer: a", "A"), ('{"winner": "B"}', "B"), ("Long reasoning.\nB", "B")],
)  # fmt: skip
def test_parse_preference(reply: str, verdict: str) -> None:
    assert parse_preference(reply) == verdict


def test_parse_preference_refuses_prose() -> None:
    with pytest.raises(PairwiseParseError, match="A, B or tie"):
        parse_preference("Both answers have merit.")


def fake_call(pick: Callable[[str, str], str]) -> Any:
    """A JudgeCall answering ``pick(response_a, response_b)``; records what it was asked."""
    asked: list[Sequence[Mapping[str, str]]] = []

    async def call(messages: Sequence[Mapping[str, str]]) -> str:
        asked.append(messages)
        text = messages[1]["content"]
        found = re.search(r"## Response A\n(.*?)\n\n## Response B\n(.*?)\n\n", text, re.S)
        assert found is not None
        return pick(found.group(1), found.group(2))

    call.asked = asked  # type: ignore[attr-defined]
    return call


ROW = Example(id="r1", messages=({"role": "user", "content": "review 1: great film"},))


def test_both_orders_are_asked_and_position_bias_is_a_tie() -> None:
    content = fake_call(lambda a, b: "A" if a == "good" else "B")
    [won] = asyncio.run(compare_all(content, judge(), [(ROW, "good", "bad")]))
    assert won.share == 1.0 and won.orders == ("first", "first") and not won.position_bias
    assert len(content.asked) == 2  # A/B, then B/A
    always_first = fake_call(lambda a, b: "A")
    [biased] = asyncio.run(compare_all(always_first, judge(), [(ROW, "good", "bad")]))
    assert biased.share == 0.5 and biased.position_bias and biased.error is None


def test_unusable_verdict_is_retried_then_a_tie_with_an_error() -> None:
    call = fake_call(lambda a, b: "I cannot decide.")
    [row] = asyncio.run(compare_all(call, judge(), [(ROW, "good", "bad")]))
    assert row.share == 0.5 and row.error and "2 attempts" in row.error
    assert len(call.asked) == 4  # each order: once, then once more with a repair turn
    assert "could not be used" in call.asked[-1][-1]["content"]


def test_label_free_pdo_duels_are_decided_by_the_pairwise_judge(tmp_path: Path) -> None:
    fake = FakeModel(scripted(prefers_one_word)).install()
    result = run(tmp_path, label_free(), judge())
    duels = events(result, "pdo_duel")
    assert duels and all(d["decided_by"] == "pairwise judge" for d in duels)
    judged = events(result, "pdo_pairwise")
    # Both orders per row; a pair that meets again on the same rows is served by the cache.
    assert 0 < len(pairwise_calls(fake)) <= 2 * sum(j["rows"] for j in judged)
    # The keyword prompt answers in one word on every row: it wins its duels and is champion.
    with_keyword = [d for d in duels if {d["first"], d["second"]} & {1}]
    assert with_keyword and all(
        d["first_share"] > 0.5 if d["first"] == 1 else d["first_share"] < 0.5 for d in with_keyword
    )
    assert KEYWORD in result.best_prompt
    # The iteration score is the champion's metric score, never a win rate.
    train = [e for e in events(result, "evaluation") if e["label"] == "train:it1"]
    assert result.iterations[0].score == train[-1]["mean_score"]
    assert result.usage["judge"]["calls"] >= len(pairwise_calls(fake))


def test_labelled_run_with_a_judge_makes_no_pairwise_calls(tmp_path: Path) -> None:
    fake = FakeModel(scripted(prefers_one_word)).install()
    result = run(tmp_path, make_rows(40), "exact_match", judge())
    assert fake.calls_to("fake/judge") and not pairwise_calls(fake)
    assert all(d["decided_by"] == "metric" for d in events(result, "pdo_duel"))


def test_position_biased_judge_decides_nothing(tmp_path: Path) -> None:
    fake = FakeModel(scripted(lambda request: "A")).install()
    result = run(tmp_path, label_free(), judge())
    assert pairwise_calls(fake)
    assert all(d["first_share"] == 0.5 for d in events(result, "pdo_duel"))
    judged = events(result, "pdo_pairwise")
    assert all(j["position_bias"] == j["rows"] and j["unusable"] == 0 for j in judged)


def test_unusable_pairwise_reply_is_a_logged_tie(tmp_path: Path) -> None:
    fake = FakeModel(scripted(lambda request: "Hard to say.")).install()
    result = run(tmp_path, label_free(), judge())
    judged = events(result, "pdo_pairwise")
    rows = sum(j["rows"] for j in judged)
    calls = len(pairwise_calls(fake))  # two orders, each retried once; repeats are cached
    assert rows and calls % 4 == 0 and 0 < calls <= 4 * rows
    assert all(d["first_share"] == 0.5 for d in events(result, "pdo_duel"))
    unusable = events(result, "pdo_pairwise_unusable")
    assert len(unusable) == rows and "2 attempts" in unusable[0]["error"]
    assert result.completed
