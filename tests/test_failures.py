"""Failure kinds of tool-call and JSON answers, and the evidence reflective strategies get per row
(issue 31, item 4): the kind (``failure: wrong function``), a dataset column named by
``--feedback-field``, a judge's rationale.

The kinds are read off real metric verdicts (``tool_call``, ``json_match``); the rows shown to a
reasoning model come from real runs with a fake task model and a fake reasoning model behind the
LiteLLM boundary (:class:`reflex.testing.FakeModel`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reflex import PromptOptimizer
from reflex.api import (
    FORMAT_FAILURES,
    NEAR_MISS_LABEL,
    OFF_LABEL,
    VALUE_FAILURES,
    WRONG_FUNCTION,
    Example,
    Metric,
    Sample,
    failure_counts,
    failure_kind,
    label_failure,
)
from reflex.cli import main
from reflex.data.dataset import Dataset
from reflex.errors import ConfigurationError
from reflex.plugins import get_registry
from reflex.testing import FakeModel, FakeRequest
from reflex.toolcalls import ToolCall, render_answer

HYPOT: dict[str, Any] = {
    "type": "function",
    "function": {"name": "math_hypot", "parameters": {"type": "object", "properties": {}}},
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"value": {"type": "number"}, "unit": {"type": "string"}},
    "required": ["value", "unit"],
}


def verdict(metric: Metric, output: str, ideal: str | None) -> Sample:
    """A sample of ``output`` as the evaluator records it: objectives named ``metric.key``."""
    example = Example(id="r", messages=({"role": "user", "content": "q"},), ideal=ideal)
    score = metric.score(output, example)
    objectives = {f"{metric.name}.{k}": v for k, v in score.objectives.items()}
    return Sample("r", "m", output, score.value, {metric.name: score.value}, objectives=objectives)


def call(name: str, **arguments: object) -> str:
    return render_answer(None, [ToolCall(name, arguments)])


@pytest.mark.parametrize(
    ("output", "ideal", "kind"),
    [
        ("The hypotenuse is 5.", call("math_hypot", x=3, y=4), "no tool call"),
        (call("math_hypot", x=3, y=4), "It is sunny.", "unwanted tool call"),
        (call("math_sqrt", x=3), call("math_hypot", x=3, y=4), "wrong function"),
        (call("math_hypot", x=3, y=5), call("math_hypot", x=3, y=4), "wrong arguments"),
        (call("math_hypot", x=3, y=4), call("math_hypot", x=3, y=4), None),
        ("It is sunny.", "It is sunny.", None),
    ],
)
def test_a_tool_call_answer_s_kind(output: str, ideal: str, kind: str | None) -> None:
    sample = verdict(get_registry().metric("tool_call"), output, ideal)
    assert failure_kind(sample) == kind
    assert (kind in FORMAT_FAILURES) == (kind in ("no tool call", "unwanted tool call"))


@pytest.mark.parametrize(
    ("output", "kind"),
    [
        ("three kilograms", "not JSON"),
        ('{"value": "3", "unit": "kg"}', "schema-invalid"),
        ('{"value": 4, "unit": "kg"}', "wrong fields"),
        ('{"value": 3, "unit": "kg"}', None),
    ],
)
def test_a_json_answer_s_kind(output: str, kind: str | None) -> None:
    metric = get_registry().metric("json_match", schema=SCHEMA)
    sample = verdict(metric, output, '{"value": 3, "unit": "kg"}')
    assert failure_kind(sample) == kind


def test_other_metrics_give_no_kind_and_the_kinds_are_counted() -> None:
    exact = verdict(get_registry().metric("exact_match"), "b", "a")
    assert exact.score == 0.0 and failure_kind(exact) is None
    tool = get_registry().metric("tool_call")
    samples = [
        verdict(tool, "text", call("f", a=1)),
        verdict(tool, "more text", call("f", a=1)),
        verdict(tool, call("g", a=1), call("f", a=1)),
        exact,
    ]
    assert failure_counts(samples) == {"no tool call": 2, WRONG_FUNCTION: 1}
    assert {"wrong arguments", "wrong fields"} == VALUE_FAILURES


# --- what a reflective strategy is shown per row ------------------------------------------------

REASONER = "fake/reasoner"
SEED = "Call the right function."


def task_answer(request: FakeRequest) -> str:
    """Row i: prose (i % 3 == 0), the wrong function (1), the wrong arguments (2)."""
    i = int(request.user.split()[-1])
    if i % 3 == 0:
        return "I would compute the hypotenuse."
    if i % 3 == 1:
        return call("math_sqrt", x=i)
    return call("math_hypot", x=i, y=0)


def responder(request: FakeRequest) -> str:
    if request.model.startswith(REASONER):
        return "<diagnosis>calls</diagnosis>\n<edit>one rule</edit>\n<prompt>Call it.</prompt>"
    if request.model.startswith("fake/judge"):
        reason = f"misses the unit on {request.user.split()[-1]}"
        return json.dumps({"correctness": {"grade": 2, "reason": reason}})
    return task_answer(request)


@pytest.fixture
def fake() -> Iterator[FakeModel]:
    yield FakeModel(responder).install()


def rows(n: int = 15) -> Dataset:
    return Dataset(
        [
            Example(
                id=f"r{i}",
                messages=({"role": "user", "content": f"hypot of row {i}"},),
                ideal=call("math_hypot", x=i, y=i + 1),
                metadata={"critique": f"critique-of-r{i}: name the arguments"},
            )
            for i in range(n)
        ],
        name="hypot",
    )


def run(tmp_path: Path, strategy: str, **options: Any) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(rows())
        .set_tools([HYPOT])
        .add_provider("fake/task")
        .add_metric("tool_call")
        .set_reasoning_model(REASONER)
        .set_strategy(strategy, **options)
        .set_feedback_field("critique")
        .configure(
            max_iterations=1, early_stopping_patience=None, batch_size=12, run_dir=str(tmp_path)
        )
    )


def reasoning_text(fake: FakeModel) -> str:
    return "\n".join(m["content"] for r in fake.requests if r.model == REASONER for m in r.messages)


@pytest.mark.parametrize(
    ("strategy", "options"), [("iterative", {"worst_k": 12}), ("gepa", {"minibatch_size": 6})]
)
def test_reflective_rows_show_the_failure_kind_and_the_feedback_column(
    fake: FakeModel, tmp_path: Path, strategy: str, options: dict[str, Any]
) -> None:
    result = run(tmp_path, strategy, **options).run(SEED)
    text = reasoning_text(fake)
    assert text, "the reasoning model was never asked"
    kinds = {line for line in text.splitlines() if line.startswith("failure: ")}
    assert kinds <= {"failure: no tool call", "failure: wrong function", "failure: wrong arguments"}
    assert len(kinds) >= 2  # rows of different kinds were shown
    splits = json.loads((Path(result.run_dir) / "splits.json").read_text(encoding="utf-8"))
    shown = {
        line.split(":")[1].strip().removeprefix("critique-of-")
        for line in text.splitlines()
        if line.startswith("critique: ")
    }
    assert shown, "no row's critique was shown"
    assert shown <= set(splits["train"])  # held-out rows' columns never reach the reasoner
    task = [m for r in fake.requests if r.model == "fake/task" for m in r.messages]
    assert task and not any("critique-of-" in str(m.get("content")) for m in task)


def test_rows_show_no_feedback_column_unless_one_is_named(fake: FakeModel, tmp_path: Path) -> None:
    run(tmp_path, "iterative", worst_k=12).set_feedback_field(None).run(SEED)
    text = reasoning_text(fake)
    assert "failure: " in text and "critique-of-" not in text


def test_a_judge_s_rationale_reaches_the_reasoning_model(fake: FakeModel, tmp_path: Path) -> None:
    data = Dataset(
        [
            Example(id=f"j{i}", messages=({"role": "user", "content": f"weigh item {i}"},))
            for i in range(12)
        ],
        name="weights",
    )
    (
        PromptOptimizer()
        .set_dataset(data)
        .add_provider("fake/task")
        .add_metric("llm_judge", model="fake/judge", criteria_list=["correctness"])
        .set_reasoning_model(REASONER)
        .set_strategy("iterative", worst_k=4)
        .configure(
            max_iterations=1, early_stopping_patience=None, batch_size=8, run_dir=str(tmp_path)
        )
        .run("Weigh the item.")
    )
    lines = [line for line in reasoning_text(fake).splitlines() if "feedback (llm_judge)" in line]
    assert len(lines) == 4, lines
    for line in lines:  # the judge's own words for that row
        number = line.rsplit(" ", 1)[-1]
        assert line == f"feedback (llm_judge): correctness 2/5: misses the unit on {number}"


def test_a_feedback_field_no_train_row_has_is_one_error_before_any_call(
    fake: FakeModel, tmp_path: Path
) -> None:
    with pytest.raises(ConfigurationError, match="no train row has a column 'review'"):
        run(tmp_path, "iterative").set_feedback_field("review").run(SEED)
    assert fake.requests == []


def test_a_feedback_field_that_fills_a_template_variable_is_refused(
    fake: FakeModel, tmp_path: Path
) -> None:
    records = [
        {"id": f"t{i}", "question": f"q{i}", "critique": "c", "ideal": "a"} for i in range(6)
    ]
    template = [
        {"role": "system", "content": "Answer."},
        {"role": "user", "content": "{{question}} ({{critique}})"},
    ]
    opt = (
        PromptOptimizer()
        .set_dataset(records)
        .add_provider("fake/task")
        .add_metric("exact_match")
        .set_reasoning_model(REASONER)
        .set_feedback_field("critique")
        .configure(run_dir=str(tmp_path))
    )
    with pytest.raises(ConfigurationError, match=r"also fills the template variable \{\{critique"):
        opt.run(template)
    assert fake.requests == []


def test_the_cli_refuses_an_unknown_feedback_field_with_exit_2(
    fake: FakeModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "input": f"q {i}", "ideal": "a"}) + "\n" for i in range(8)
        ),
        encoding="utf-8",
    )
    (tmp_path / "prompt.md").write_text("Answer.\n", encoding="utf-8")
    argv = ["optimize", str(data), str(tmp_path / "prompt.md"), "-m", "fake/task"]
    argv += ["--reasoning-model", REASONER, "--feedback-field", "critique"]
    argv += ["--run-dir", str(tmp_path / ".reflex")]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and fake.requests == []
    err = capsys.readouterr().err.strip().splitlines()
    assert any("--feedback-field critique: no train row has a column 'critique'" in e for e in err)


@pytest.mark.parametrize(
    ("output", "kind"),
    [("Sports", NEAR_MISS_LABEL), ("weather", OFF_LABEL), (" sport. ", None), ("Tech", None)],
)
def test_an_answer_outside_the_label_set_is_a_format_failure(output: str, kind: str | None) -> None:
    assert label_failure(output, ["Sport", "tech"]) == kind
    assert kind is None or kind in FORMAT_FAILURES
    assert label_failure(output, []) is None
