"""The rows a strategy shows the reasoning model: each field cut to its share."""

from __future__ import annotations

from test_failures import call, verdict

from reflex.api import Example
from reflex.plugins import get_registry
from reflex_strategies._rows import evidence_lines, sample_row


def test_a_row_s_evidence_lines_are_cut_like_its_other_fields() -> None:
    tool = get_registry().metric("tool_call")
    sample = verdict(tool, call("math_sqrt", x=1), call("math_hypot", x=1, y=2))
    example = Example(
        id="r",
        messages=({"role": "user", "content": "q"},),
        ideal=call("math_hypot", x=1, y=2),
        metadata={"critique": "x" * 50, "score_note": 3},
    )
    assert evidence_lines(example, sample, 10, "critique") == [
        "failure: wrong function",
        "critique: " + "x" * 10,
    ]
    assert evidence_lines(example, sample, 10, "score_note") == [
        "failure: wrong function",
        "score_note: 3",
    ]
    row = sample_row(example, sample, 400, feedback_field="critique").splitlines()
    assert row[-2:] == ["failure: wrong function", "critique: " + "x" * 50]
    plain = verdict(get_registry().metric("exact_match"), "b", "a")
    assert evidence_lines(example, plain, 10) == []  # no kind, no column named: rows unchanged
