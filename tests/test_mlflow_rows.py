"""One evaluated row as an MLflow trace (``reflex_mlflow.rows``), built in memory: inputs that
pair across prompts, answers with tool calls or JSON parsed, assessments per metric (a failed
metric as an error), the reference as an Expectation, latency and tokens."""

from __future__ import annotations

from mlflow.entities import Expectation, Feedback, TraceState

from reflex.api import Example, Sample
from reflex_mlflow.rows import EXPECTATION, row_inputs, row_outputs, row_trace

ROW = Example("r1", ({"role": "user", "content": "review 1: great film"},), ideal="positive")


def sample(**changes: object) -> Sample:
    values: dict[str, object] = {
        "example_id": "r1",
        "model": "fake/task",
        "output": "positive",
        "score": 1.0,
        "scores": {"exact_match": 1.0, "length": 0.5},
        "feedback": {"length": "a little long"},
        "latency_ms": 250.0,
        "prompt_tokens": 20,
        "completion_tokens": 3,
        **changes,
    }
    return Sample(**values)  # type: ignore[arg-type]


def test_inputs_are_the_rows_not_the_prompts() -> None:
    assert row_inputs(sample(), ROW) == {
        "example_id": "r1",
        "input": "review 1: great film",
        "model": "fake/task",
    }
    templated = Example("r2", ({"role": "user", "content": "{}"},), variables={"city": "Oslo"})
    assert row_inputs(sample(example_id="r2"), templated)["variables"] == {"city": "Oslo"}
    assert row_inputs(sample(), None) == {"example_id": "r1", "model": "fake/task"}


def test_outputs_parse_tool_calls_and_json() -> None:
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
    assert row_outputs(call) == {
        "content": "",
        "tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}],
    }
    assert row_outputs('{"label": "positive"}') == {"label": "positive"}
    assert row_outputs("{not json") == "{not json"
    assert row_outputs("positive") == "positive"


def test_a_trace_with_its_assessments_latency_and_tokens() -> None:
    messages = [{"role": "system", "content": "Classify."}, {"role": "user", "content": "x"}]
    built = row_trace("1", "run9", sample(), ROW, messages, {"reflex.row": "r1@fake/task"})
    info = built.info
    assert built.key == "r1@fake/task" and info.trace_id.startswith("tr-")
    assert info.trace_metadata["mlflow.sourceRun"] == "run9"
    assert info.execution_duration == 250 and info.state == TraceState.OK
    assert info.trace_metadata["mlflow.trace.tokenUsage"] == (
        '{"input_tokens": 20, "output_tokens": 3, "total_tokens": 23}'
    )
    feedback = {a.name: a for a in info.assessments if isinstance(a, Feedback)}
    assert feedback["exact_match"].value == 1.0 and feedback["length"].rationale == "a little long"
    assert feedback["score"].value == 1.0  # the combined score, when several metrics score
    (expected,) = [a for a in info.assessments if isinstance(a, Expectation)]
    assert (expected.name, expected.value) == (EXPECTATION, "positive")
    root, task = built.spans
    assert {a.span_id for a in info.assessments} == {root.span_id}
    assert task.parent_id == root.span_id and task.inputs == {"messages": messages}
    assert task.attributes["reflex.model"] == "fake/task"
    assert all(a.metadata["mlflow.assessment.sourceRunId"] == "run9" for a in info.assessments)


def test_a_row_that_failed_is_an_error_trace() -> None:
    failed = sample(
        score=None, scores={}, failed_metrics=["llm_judge"], error="llm_judge: bad reply"
    )
    built = row_trace("1", "run9", failed, None, None, {})
    assert built.info.state == TraceState.ERROR and len(built.spans) == 1
    (verdict,) = built.info.assessments
    assert verdict.name == "llm_judge" and verdict.error is not None
    assert "bad reply" in str(verdict.error.error_message)
