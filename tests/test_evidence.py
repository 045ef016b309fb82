"""What a run has seen (Evidence) and the axis auto works on next (choose_axis)."""

from __future__ import annotations

from typing import Any

from reflex_strategies._evidence import Evidence, PhaseOutcome, choose_axis

AXES = ["instructions", "fewshot", "iterative", "structural", "pdo"]


def evidence(**changes: Any) -> Evidence:
    values: dict[str, Any] = {
        "labels": True,
        "references": 1.0,
        "format_failures": 0.0,
        "content_failures": 0.5,
        "remaining_iterations": 10,
        "remaining_calls": None,
        "calls_per_iteration": 16,
        "min_calls_per_iteration": 12,
    }
    return Evidence(**{**values, **changes})


def test_choice_follows_the_evidence() -> None:
    assert choose_axis(evidence(), [], AXES) == "instructions"
    assert choose_axis(evidence(labels=False), [], AXES) == "fewshot"  # label-free
    no_refs = evidence(labels=False, references=0.0)
    assert choose_axis(no_refs, [], AXES) == "iterative"
    done = [PhaseOutcome("instructions", 0.1, 2), PhaseOutcome("fewshot", 0.1, 3)]
    assert choose_axis(evidence(), done, AXES) == "iterative"
    formats = evidence(format_failures=0.9, content_failures=0.0)
    # Format failures favour layout work once iterative stopped paying off ...
    assert choose_axis(formats, [*done, PhaseOutcome("iterative", 0.0, 2)], AXES) == "structural"
    # ... and two phases in a row without a gain favour the broader pdo search.
    flat = [*done, PhaseOutcome("iterative", 0.0, 2), PhaseOutcome("structural", 0.0, 2)]
    assert choose_axis(formats, flat, AXES) == "pdo"
    # A phase that gained may repeat (at most max_repeats); data axes never repeat.
    gained = [PhaseOutcome("iterative", 0.2, 2)]
    assert choose_axis(evidence(), gained, ["fewshot", "iterative"][1:]) == "iterative"
    assert choose_axis(evidence(), gained, ["iterative"], max_repeats=1) is None
    # Budget: no iterations or too few calls left ends the run; pdo needs room.
    assert choose_axis(evidence(remaining_iterations=0), [], AXES) is None
    assert choose_axis(evidence(remaining_calls=10), [], AXES) is None
    # One val pass is enough: screening is skipped when no val pass could follow it.
    assert choose_axis(evidence(remaining_calls=12), [], AXES) == "instructions"
    assert choose_axis(evidence(remaining_iterations=2), flat[:3], ["pdo"]) is None


def test_wrong_values_favour_demos_and_wrong_functions_the_rules() -> None:
    axes = ["instructions", "fewshot"]
    assert choose_axis(evidence(content_failures=0.0), [], axes) == "instructions"
    values = evidence(content_failures=0.6, value_failures=0.6)
    assert choose_axis(values, [], axes) == "fewshot"
    functions = evidence(content_failures=0.6, wrong_function=0.6)
    assert choose_axis(functions, [], axes) == "instructions"
