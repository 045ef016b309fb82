"""Prompt layouts: parsing a prompt into its parts and the transforms that rewrite its layout."""

from __future__ import annotations

import pytest

from reflex.api import split_chat_demos
from reflex_strategies._layout import TRANSFORMS, apply_transform, parse_parts

BODY = (
    "You are a film critic.\nPlease classify the sentiment.\n\nDo not explain.\n"
    "Answer with one word."
)
RICH = BODY + "\n\nExamples:\n\nInput: nice film\nOutput: positive"


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_every_transform_keeps_content_and_changes_layout(name: str) -> None:
    out = apply_transform(name, RICH)
    assert out != RICH
    assert out.endswith("Examples:\n\nInput: nice film\nOutput: positive")  # demos verbatim
    before, after = parse_parts(RICH), parse_parts(out)
    assert after.tail == before.tail
    if name == "flat_minimal":  # one paragraph, filler words dropped
        assert out.startswith("You are a film critic. Classify the sentiment. Do not explain.")
    else:
        assert after == before  # every sentence kept, in its kind, nothing invented


def test_transforms_are_distinct_and_compose() -> None:
    outputs = {name: apply_transform(name, RICH) for name in TRANSFORMS}
    assert len(set(outputs.values())) == len(TRANSFORMS)
    twice = apply_transform("xml_tags", outputs["markdown_headers"])
    assert twice == outputs["xml_tags"]
    assert "## Output format\nAnswer with one word." in outputs["markdown_headers"]
    assert "<constraints>\nDo not explain.\n</constraints>" in outputs["xml_tags"]
    assert "1. Read the input carefully." in outputs["decomposed_steps"]


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_every_transform_keeps_chat_turn_demos_verbatim_at_the_end(name: str) -> None:
    tail = "Examples (as chat turns):\n\nInput: nice film\nOutput: positive"
    out = apply_transform(name, f"{BODY}\n\n{tail}")
    assert out.endswith(tail) and out.count("Input: ") == 1
    assert split_chat_demos(out) == (out[: -len(tail)].strip(), [("nice film", "positive")])
