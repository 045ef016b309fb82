"""Failure kinds as evidence for the reasoning-free strategies and ``auto`` (issue 31, item 4).

Format failures -> a format rule (``instructions``), wrong function -> a tool-selection rule,
wrong argument values -> demos (``fewshot``, favoured by ``auto``'s evidence). The rules come
from ``reflex_strategies._rules``; the runs use a fake task model behind the LiteLLM boundary.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reflex import PromptOptimizer
from reflex.data.dataset import Dataset
from reflex.result import OptimizationResult
from reflex.testing import FakeModel, FakeRequest
from reflex.toolcalls import ToolCall, render_answer
from reflex.types import Example
from reflex_strategies._rules import (
    JSON_FORMAT,
    TOOL_FORMAT,
    TOOL_FORMAT_WHEN_NEEDED,
    TOOL_SELECTION,
    rule_candidates,
    structured_task,
)
from reflex_strategies.instructions import InstructionsOptions, instruction_candidates

HYPOT: dict[str, Any] = {"type": "function", "function": {"name": "math_hypot"}}
SQRT: dict[str, Any] = {"type": "function", "function": {"name": "math_sqrt"}}
SEED = "Use the tools."


def call(name: str, **arguments: object) -> str:
    return render_answer(None, [ToolCall(name, arguments)])


def example(i: int, ideal: str, text: str | None = None) -> Example:
    messages = ({"role": "user", "content": text or f"question {i}"},)
    return Example(id=f"r{i}", messages=messages, ideal=ideal)


def tool_rows(n: int = 6) -> list[Example]:
    return [
        example(
            i, call("math_hypot" if i % 2 else "math_sqrt", x=i), f"{'hyp' if i % 2 else 'sq'} {i}"
        )
        for i in range(n)
    ]


def test_the_task_kind_is_read_off_the_references() -> None:
    assert structured_task(tool_rows()) == "tool_call"
    assert structured_task([example(0, '{"a": 1}'), example(1, "[1, 2]")]) == "json"
    assert structured_task([example(0, '{"a": 1}'), example(1, "kg")]) is None
    assert structured_task([example(0, "yes"), example(1, "no")]) is None


def test_tool_rules_follow_the_failure_kinds() -> None:
    rows = tool_rows()
    every = rule_candidates(rows, SEED)  # no counts: all, the combined rule first
    assert [edit for edit, _ in every] == [
        "state the tool-call format and state how to choose the function",
        "state the tool-call format",
        "state how to choose the function",
    ]
    assert TOOL_FORMAT in every[0][1] and TOOL_SELECTION in every[0][1]
    # A few functions that repeat: one short input per function.
    assert '- math_hypot: e.g. "hyp 1"' in every[0][1] and '- math_sqrt: e.g. "sq 0"' in every[0][1]
    only_format = rule_candidates(rows, SEED, {"no tool call": 3, "wrong arguments": 2})
    assert [edit for edit, _ in only_format] == ["state the tool-call format"]
    selection_first = rule_candidates(rows, SEED, {"wrong function": 3, "no tool call": 1})
    assert [edit for edit, _ in selection_first][1:] == [
        "state how to choose the function",
        "state the tool-call format",
    ]
    # Some references call nothing: the format rule says when to call.
    mixed = [*rows, example(9, "It is sunny.")]
    assert TOOL_FORMAT_WHEN_NEEDED in rule_candidates(mixed, SEED, {"no tool call": 1})[0][1]


def test_json_rules_state_the_format_and_the_common_keys() -> None:
    rows = [example(0, '[{"value": 3, "unit": "kg"}]'), example(1, '{"unit": "m", "value": 2}')]
    ((edit, prompt),) = rule_candidates(rows, SEED, {"not JSON": 2})
    assert edit == "state the JSON output format"
    assert prompt == f"{SEED}\n\n{JSON_FORMAT} Each object has the keys: value, unit."


def test_instructions_uses_the_rules_for_tool_tasks_and_labels_for_others() -> None:
    options = InstructionsOptions(max_candidates=2)
    assert len(instruction_candidates(tool_rows(), SEED, options)) == 2
    labels = [example(i, "yes" if i % 2 else "no") for i in range(6)]
    assert "The answer is one of: no, yes." in instruction_candidates(labels, SEED, options)[0][1]


# --- runs ---------------------------------------------------------------------------------------


def rows_for_run(n: int = 20) -> Dataset:
    return Dataset(
        [
            Example(
                id=f"q{i}",
                messages=({"role": "user", "content": f"hypot of {i} and {i + 1}"},),
                ideal=call("math_hypot", x=i, y=i + 1),
            )
            for i in range(n)
        ],
        name="hypot",
    )


def task_model(answer: Callable[[FakeRequest, int, int], str]) -> FakeModel:
    def respond(request: FakeRequest) -> str:
        x, _, y = request.user.removeprefix("hypot of ").partition(" and ")
        return answer(request, int(x), int(y))

    return FakeModel(respond).install()


def auto_run(tmp_path: Path, **options: Any) -> OptimizationResult:
    return (
        PromptOptimizer()
        .set_dataset(rows_for_run())
        .set_tools([HYPOT, SQRT])
        .add_provider("fake/task")
        .add_metric("tool_call")
        .set_strategy("auto", **options)
        .configure(max_iterations=6, early_stopping_patience=None, run_dir=str(tmp_path))
        .run(SEED)
    )


def events(result: OptimizationResult, kind: str) -> list[dict[str, Any]]:
    lines = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["type"] == kind]


def test_reasoning_free_auto_fixes_prose_answers_with_the_format_rule(tmp_path: Path) -> None:
    """The model answers in prose until the prompt tells it to call; instructions' format rule
    is the fix, chosen first from the probe's format failures."""

    def answer(request: FakeRequest, x: int, y: int) -> str:
        if TOOL_FORMAT in request.system:
            return call("math_hypot", x=x, y=y)
        return f"The hypotenuse of {x} and {y} is easy to compute."

    fake = task_model(answer)
    result = auto_run(tmp_path)
    first = events(result, "auto_choice")[0]
    assert first["axis"] == "instructions"
    assert first["evidence"]["format_failures"] == 1.0  # every probe row: no tool call
    found = events(result, "instructions_candidates")[0]
    assert found["failures"] == {"no tool call": 8}
    assert found["edits"] == ["state the tool-call format"]
    assert result.baseline is not None and result.baseline.mean_score == 0.0
    assert result.final is not None and result.final.mean_score == 1.0
    assert TOOL_FORMAT in result.best_prompt
    assert all(r.model == "fake/task" for r in fake.requests)  # no reasoning model, no call to one


def test_wrong_argument_values_send_auto_to_demos_first(tmp_path: Path) -> None:
    """Calls to the right function with wrong values: fewshot's demos go first, and the rules
    keep their share of the iterations."""

    def answer(request: FakeRequest, x: int, y: int) -> str:
        demos = any(m.get("tool_calls") for m in request.messages)
        return call("math_hypot", x=x, y=y if demos else 0)

    task_model(answer)
    result = auto_run(tmp_path)
    choices = events(result, "auto_choice")
    assert choices[0]["axis"] == "fewshot"
    assert choices[0]["evidence"]["value_failures"] == 1.0
    assert choices[0]["evidence"]["format_failures"] == 0.0
    assert result.final is not None and result.final.mean_score == 1.0
    phases = [p["phase"] for p in result.phase_history]
    assert phases[:2] == ["fewshot", "instructions"] or phases == ["fewshot"]


def test_wrong_functions_get_the_selection_rule(tmp_path: Path) -> None:
    def answer(request: FakeRequest, x: int, y: int) -> str:
        name = "math_hypot" if TOOL_SELECTION in request.system else "math_sqrt"
        return call(name, x=x, y=y)

    task_model(answer)
    result = auto_run(tmp_path)
    found = events(result, "instructions_candidates")[0]
    assert found["failures"] == {"wrong function": 8}
    assert found["edits"] == ["state how to choose the function"]
    assert result.final is not None and result.final.mean_score == 1.0
