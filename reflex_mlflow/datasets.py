"""MLflow as a dataset source: ``mlflow:<evaluation dataset>`` and ``mlflow-traces:<experiment>``.

- ``mlflow:NAME`` (or ``mlflow:d-...``, a dataset id): the records of an MLflow GenAI evaluation
  dataset (``mlflow.genai.datasets``); each row keeps its ``dataset_record_id`` as its id.
- ``mlflow-traces:EXPERIMENT?filter=...&max_results=N``: the traces of an experiment (by name
  or id) that carry an expectation (``mlflow.log_expectation``); the request is the row's
  inputs, the expectation its reference, the trace id its id. ``filter`` is MLflow's trace
  search filter (``search_traces``), URL-quoted where it holds ``&``, ``#`` or ``//``.

Both read from ``MLFLOW_TRACKING_URI`` (MLflow's own default without it). A row's inputs become
its fields (a chat template's ``{{variables}}`` bind to them; ``input`` is the one text input, or
the inputs as a JSON line), its reference is the ``expected_response`` expectation (else the
only one, else all of them as JSON); the whole expectations and the source stay in ``metadata``.
Rows come back sorted by id, so the seeded split is the same on every run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

import mlflow
from mlflow.exceptions import MlflowException

from reflex.api import ConfigurationError
from reflex.api.tracking import redact_url

__all__ = ["RESERVED", "read_evaluation_dataset", "read_traces", "row"]

# Fields of a reflex record an MLflow input may not be named (it would be read as one of them).
RESERVED = frozenset(
    {"id", "split", "metadata", "messages", "tools", "variables", "ideal", "expected"}
    | {"output", "answer", "target", "conversations", "instruction"}
)
_REFERENCE = "expected_response"


def row(
    row_id: str, inputs: object, expectations: object, where: str, **source: object
) -> dict[str, object]:
    """One reflex record from an MLflow row: inputs as fields, the expectation as reference."""
    if not isinstance(inputs, Mapping) or not inputs:
        raise ConfigurationError(f"{where}: row {row_id} has no inputs object ({inputs!r})")
    clash = sorted(str(key) for key in inputs if key in RESERVED)
    if clash:
        raise ConfigurationError(
            f"{where}: row {row_id} has an input named {clash[0]!r}, which reflex reads as a "
            "record field; rename that input in MLflow"
        )
    expected = dict(expectations) if isinstance(expectations, Mapping) else {}
    record: dict[str, object] = {str(key): value for key, value in inputs.items()}
    if "input" not in record:
        only = next(iter(inputs.values())) if len(inputs) == 1 else None
        record["input"] = only if isinstance(only, str) else json.dumps(inputs, default=str)
    record["id"] = row_id
    record["ideal"] = _reference(expected)
    record["metadata"] = {"expectations": expected, **{k: v for k, v in source.items() if v}}
    return record


def _reference(expectations: Mapping[str, object]) -> object:
    if not expectations:
        return None
    if _REFERENCE in expectations:
        return expectations[_REFERENCE]
    if len(expectations) == 1:
        return next(iter(expectations.values()))
    return json.dumps(dict(expectations), ensure_ascii=False, sort_keys=True, default=str)


def _with_expectations(rows: list[dict[str, object]], where: str, how: str) -> list[Any]:
    if not rows:
        raise ConfigurationError(f"{where}: no rows; {how}")
    if all(r["ideal"] is None for r in rows):
        raise ConfigurationError(f"{where}: no row has an expectation; {how}")
    return sorted(rows, key=lambda r: str(r["id"]))


def read_evaluation_dataset(name: str) -> list[Any]:
    """The records of the evaluation dataset ``name`` (or id ``d-...``), sorted by record id."""
    from mlflow.genai.datasets import get_dataset

    where = f"mlflow:{name}"
    by_id = name.startswith("d-")
    try:
        dataset = get_dataset(dataset_id=name) if by_id else get_dataset(name=name)
        frame = dataset.to_df()
    except MlflowException as exc:
        raise ConfigurationError(f"{where}: {_first_line(exc)} ({_uri()})") from None
    rows = [
        row(
            str(item["dataset_record_id"]),
            item.get("inputs"),
            item.get("expectations"),
            where,
            mlflow_dataset=dataset.dataset_id,
        )
        for item in frame.to_dict("records")
    ]
    how = "add expectations with dataset.merge_records([{'inputs': ..., 'expectations': ...}])"
    return _with_expectations(rows, where, how)


def read_traces(text: str) -> list[Any]:
    """The traces of an experiment that carry an expectation, as records sorted by trace id."""
    name, _, query = text.partition("?")
    where = f"mlflow-traces:{text}"
    options = {key: values[-1] for key, values in parse_qs(query).items()}
    unknown = sorted(set(options) - {"filter", "max_results"})
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown option {unknown[0]!r}; the options are filter=... and max_results=N"
        )
    limit = options.get("max_results")
    if limit is not None and not (limit.isdigit() and int(limit) > 0):
        raise ConfigurationError(f"{where}: max_results must be a positive integer, got {limit!r}")
    experiment = _experiment_id(name, where)
    try:
        traces = mlflow.search_traces(
            locations=[experiment],
            filter_string=options.get("filter"),
            max_results=int(limit) if limit else None,
            return_type="list",
        )
    except MlflowException as exc:
        raise ConfigurationError(f"{where}: {_first_line(exc)}") from None
    rows = []
    for trace in traces:
        expected = {
            a.name: a.value for a in trace.info.assessments if type(a).__name__ == "Expectation"
        }
        if expected:
            inputs = _request(trace.data.request)
            trace_id = trace.info.trace_id
            rows.append(row(trace_id, inputs, expected, where, mlflow_trace=trace_id))
    how = "log one with mlflow.log_expectation(trace_id=..., name='expected_response', value=...)"
    return _with_expectations(rows, where, f"{len(traces)} trace(s) matched; {how}")


def _request(request: object) -> object:
    if isinstance(request, str):
        try:
            return json.loads(request)
        except json.JSONDecodeError:
            return {"input": request}
    return request


def _experiment_id(name: str, where: str) -> str:
    client = mlflow.MlflowClient()
    try:
        found = client.get_experiment_by_name(name)
        if found is None and name.isdigit():
            found = client.get_experiment(name)
    except MlflowException as exc:
        raise ConfigurationError(f"{where}: {_first_line(exc)} ({_uri()})") from None
    if found is None:
        raise ConfigurationError(f"{where}: no experiment named {name!r} ({_uri()})")
    return str(found.experiment_id)


def _uri() -> str:
    return f"tracking URI {redact_url(mlflow.get_tracking_uri())}; set MLFLOW_TRACKING_URI"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
