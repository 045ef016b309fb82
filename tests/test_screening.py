"""Screening a candidate: the format names a prompt asks for, and answers that break the format."""

from __future__ import annotations

from typing import Any

from test_format_guard import FORMAT, SCHEMA, SEED

from reflex.config import RunConfig
from reflex.result import EvalSnapshot, Sample
from reflex.run.screening import CandidateScreen, format_names


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
