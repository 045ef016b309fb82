"""One evaluated row as MLflow writes a ``mlflow.genai.evaluate`` row: a trace with assessments.

``mlflow.genai.evaluate`` (MLflow 3.17, ``mlflow/genai/evaluation/harness.py``) logs each row of a
static dataset as a trace with one ``root_span`` holding the row's inputs and outputs
(``create_minimal_trace``), tagged with the run in its ``mlflow.sourceRun`` metadata, then each
scorer's :class:`~mlflow.entities.Feedback` and the row's
:class:`~mlflow.entities.Expectation` on the root span, with the run in their
``mlflow.assessment.sourceRunId`` metadata, and links the traces to the run. :func:`row_trace`
builds the same trace for one reflex sample, whole and in memory: the root span holds the row's
inputs (the same for the baseline and the winner, so MLflow's comparison pairs them) and its
answer; a child ``task`` span holds what the task model was sent (the rendered messages), its
answer (tool calls and JSON parsed), its latency and its tokens. Pure: nothing is sent here
(:mod:`reflex_mlflow.evaluations` writes it).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mlflow.entities import (
    AssessmentError,
    AssessmentSource,
    Expectation,
    Feedback,
    Span,
    TraceInfo,
    TraceLocation,
    TraceState,
)
from mlflow.tracing.constant import (
    TRACE_SCHEMA_VERSION,
    TRACE_SCHEMA_VERSION_KEY,
    AssessmentMetadataKey,
    SpanAttributeKey,
    TraceMetadataKey,
    TraceTagKey,
)

from reflex.api import parse_answer

if TYPE_CHECKING:
    from reflex.api import Example, Sample

__all__ = ["EXPECTATION", "RowTrace", "row_inputs", "row_outputs", "row_trace"]

EXPECTATION = "expected_response"  # the name MLflow's built-in judges read a reference from
_PREVIEW = 1000  # MLflow cuts request/response previews to this many characters
_SCHEMA = str(TRACE_SCHEMA_VERSION)  # the version of the traces MLflow 3 writes


@dataclass(frozen=True)
class RowTrace:
    """A row's trace, ready to write: its info (assessments included) and its spans."""

    info: TraceInfo
    spans: list[Span]
    key: str  # the sample's pairing key: example id @ model


def row_inputs(sample: Sample, example: Example | None) -> dict[str, Any]:
    """The row's inputs: its id, model and input (a chat template's variables, else the last
    user message); the same for every prompt, so two evaluations' rows pair on them."""
    inputs: dict[str, Any] = {"example_id": sample.example_id}
    if example is not None:
        if example.variables:
            inputs.update({"variables": dict(example.variables)})
        else:
            inputs["input"] = example.input
    inputs["model"] = sample.model
    return inputs


def row_outputs(output: str) -> Any:
    """The answer as MLflow shows it best: ``{"content", "tool_calls"}`` when it calls tools,
    the parsed value when it is a JSON object or array, else the text."""
    content, calls = parse_answer(output)
    if calls:
        return {
            "content": content,
            "tool_calls": [{"name": c.name, "arguments": dict(c.arguments)} for c in calls],
        }
    stripped = output.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    return output


def row_trace(
    experiment_id: str,
    eval_run_id: str,
    sample: Sample,
    example: Example | None,
    messages: Sequence[Mapping[str, Any]] | None,
    tags: Mapping[str, str],
) -> RowTrace:
    """The trace of one evaluated row, linked to ``eval_run_id`` (its ``mlflow.sourceRun``)."""
    trace_id = "tr-" + secrets.token_hex(16)
    root_id, task_id = secrets.token_hex(8), secrets.token_hex(8)
    latency_ns = int((sample.latency_ms or 0.0) * 1_000_000)
    end_ns = time.time_ns()
    start_ns = end_ns - latency_ns
    inputs, outputs = row_inputs(sample, example), row_outputs(sample.output)
    usage = _usage(sample)
    root = _span(trace_id, root_id, None, "root_span", "CHAIN", start_ns, end_ns, sample.error)
    root["attributes"].update(
        {SpanAttributeKey.INPUTS: _json(inputs), SpanAttributeKey.OUTPUTS: _json(outputs)}
    )
    spans = [root]
    if messages is not None:
        task = _span(trace_id, task_id, root_id, "task", "CHAT_MODEL", start_ns, end_ns, None)
        task["attributes"].update(
            {
                # the model in an attribute of ours, not in the inputs: MLflow would price the
                # usage of a span whose inputs name a model with LiteLLM, in the store's process
                SpanAttributeKey.INPUTS: _json({"messages": messages}),
                SpanAttributeKey.OUTPUTS: _json(outputs),
                "reflex.model": _json(sample.model),
                "reflex.cached": _json(sample.cached),
                **({SpanAttributeKey.CHAT_USAGE: _json(usage)} if usage else {}),
            }
        )
        spans.append(task)
    metadata = {
        TraceMetadataKey.SOURCE_RUN: eval_run_id,
        TraceMetadataKey.INPUTS: _json(inputs)[:_PREVIEW],
        TraceMetadataKey.OUTPUTS: _json(outputs)[:_PREVIEW],
        TRACE_SCHEMA_VERSION_KEY: _SCHEMA,
        **({TraceMetadataKey.TOKEN_USAGE: _json(usage)} if usage else {}),
    }
    info = TraceInfo(
        trace_id=trace_id,
        trace_location=TraceLocation.from_experiment_id(experiment_id),
        request_time=start_ns // 1_000_000,
        state=TraceState.ERROR if sample.error else TraceState.OK,
        request_preview=_json(inputs)[:_PREVIEW],
        response_preview=_json(outputs)[:_PREVIEW],
        execution_duration=latency_ns // 1_000_000,
        trace_metadata=metadata,
        tags={TraceTagKey.TRACE_NAME: "root_span", **tags},
        assessments=assessments(trace_id, root_id, eval_run_id, sample, example),
    )
    return RowTrace(info, [Span.from_dict(span) for span in spans], sample.key)


def assessments(
    trace_id: str, span_id: str, run_id: str, sample: Sample, example: Example | None
) -> list[Any]:
    """Each metric's score as a ``Feedback`` (its feedback text the rationale; a metric that
    failed on the row, its error), the combined score when there are several metrics, and the
    reference as the ``expected_response`` ``Expectation``."""
    meta = {AssessmentMetadataKey.SOURCE_RUN_ID: run_id}
    found: list[Any] = []
    for name, value in sample.scores.items():
        found.append(
            Feedback(
                name=name,
                value=value,
                rationale=sample.feedback.get(name) or None,
                source=AssessmentSource(source_type="CODE", source_id=name),
                metadata=meta,
            )
        )
    for name in sample.failed_metrics:
        error = AssessmentError(error_code="METRIC_ERROR", error_message=sample.error or name)
        source = AssessmentSource(source_type="CODE", source_id=name)
        found.append(Feedback(name=name, error=error, source=source, metadata=meta))
    if sample.score is not None and len(sample.scores) > 1:
        source = AssessmentSource(source_type="CODE", source_id="reflex")
        found.append(Feedback(name="score", value=sample.score, source=source, metadata=meta))
    if example is not None and example.ideal is not None:
        found.append(
            Expectation(
                name=EXPECTATION,
                value=example.ideal,
                source=AssessmentSource(source_type="HUMAN", source_id="dataset"),
                metadata=meta,
            )
        )
    for assessment in found:
        assessment.trace_id, assessment.span_id = trace_id, span_id
    return found


def _usage(sample: Sample) -> dict[str, int]:
    if sample.prompt_tokens is None and sample.completion_tokens is None:
        return {}
    inputs, outputs = sample.prompt_tokens or 0, sample.completion_tokens or 0
    return {"input_tokens": inputs, "output_tokens": outputs, "total_tokens": inputs + outputs}


def _span(
    trace_id: str,
    span_id: str,
    parent: str | None,
    name: str,
    kind: str,
    start_ns: int,
    end_ns: int,
    error: str | None,
) -> dict[str, Any]:
    """A span in the dict form ``Span.from_dict`` reads (MLflow's own ``to_dict`` form)."""
    return {
        "trace_id": trace_id,
        "span_id": span_id,
        "parent_span_id": parent,
        "name": name,
        "start_time_unix_nano": start_ns,
        "end_time_unix_nano": end_ns,
        "events": [],
        "status": {"code": "ERROR" if error else "OK", "message": error or ""},
        "attributes": {
            SpanAttributeKey.REQUEST_ID: _json(trace_id),
            SpanAttributeKey.SPAN_TYPE: _json(kind),
        },
        "links": [],
    }


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
