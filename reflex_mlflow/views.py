"""What the MLflow UI shows beyond params and metrics: tables, child runs, the run description.

* ``write_table`` writes a JSON table artifact in the pandas "split" form ``mlflow.log_table``
  writes (``mlflow.load_table`` reads it) and marks it as a table, so the run's Artifacts tab
  renders it as one (the iterations table and the per-example evaluation table).
* ``ChildRuns``: one nested MLflow run per evaluated candidate (``child_runs=True``), the way
  MLflow's own prompt optimization shows candidates under the parent run.
* ``description``: the run's Markdown description (the ``mlflow.note.content`` tag).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from mlflow import MlflowClient
from mlflow.data.pandas_dataset import from_pandas
from mlflow.entities import DatasetInput, InputTag, Metric, Param, RunTag
from mlflow.utils.mlflow_tags import (
    MLFLOW_DATASET_CONTEXT,
    MLFLOW_LOGGED_ARTIFACTS,
    MLFLOW_PARENT_RUN_ID,
)

from reflex.api.tracking import (
    confusion_matrices,
    evaluation_rows,
    iteration_metrics,
    redact_data,
)

if TYPE_CHECKING:
    from reflex.api import Dataset, IterationRecord, OptimizationResult, RunConfig

__all__ = [
    "ChildRuns",
    "description",
    "log_dataset_inputs",
    "log_request_settings",
    "log_result_tables",
    "prompt_version",
    "write_table",
]

EVALUATION_TABLE = "evaluation.json"
CONFUSION_TABLE = "confusion_{side}.json"  # a label task's matrices: baseline, final


def write_table(
    client: MlflowClient, run_id: str, name: str, rows: Sequence[Mapping[str, Any]]
) -> None:
    """Write ``rows`` as the table artifact ``name`` (replacing it) and mark it as a table."""
    frame = pd.DataFrame(list(rows))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name)
        frame.to_json(path, orient="split", index=False)
        client.log_artifact(run_id, path)
    tags = client.get_run(run_id).data.tags
    logged = json.loads(tags.get(MLFLOW_LOGGED_ARTIFACTS, "[]"))
    entry = {"path": name, "type": "table"}
    if entry not in logged:
        value = json.dumps([*logged, entry])
        client.log_batch(run_id, tags=[RunTag(MLFLOW_LOGGED_ARTIFACTS, value)])


def prompt_version(prompt: str) -> str:
    """A short content id for a prompt (12 hex digits of its sha256)."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:12]


class ChildRuns:
    """One child run per evaluated candidate, nested under the reflex run.

    Params: ``iteration``, ``phase``, ``prompt_version`` (content id), ``parent_version`` (the
    best prompt the candidate was tried against), ``accepted``, ``is_best``, ``rejected``.
    Metrics: ``score_train`` (its train or minibatch score), ``score_val``, ``score_<metric>``.
    Artifact: ``prompt.txt``.
    """

    def __init__(
        self, client: MlflowClient, experiment_id: str, parent_run_id: str, initial_prompt: str
    ) -> None:
        self.client = client
        self.experiment_id = experiment_id
        self.parent_run_id = parent_run_id
        self.incumbent = initial_prompt

    def candidate(self, record: IterationRecord) -> str:
        client = self.client
        run = client.create_run(
            self.experiment_id,
            tags={MLFLOW_PARENT_RUN_ID: self.parent_run_id, "reflex.candidate": "true"},
            run_name=f"candidate-{record.iteration:03d}",
        )
        run_id = run.info.run_id
        params = {
            "iteration": record.iteration,
            "phase": record.phase,
            "prompt_version": prompt_version(record.system_prompt),
            "parent_version": prompt_version(self.incumbent),
            "accepted": record.accepted,
            "is_best": record.is_best,
            "rejected": (record.rejected or "")[:500],
        }
        now = int(time.time() * 1000)
        metrics = iteration_metrics(record)
        client.log_batch(
            run_id,
            metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()],
            params=[Param(k, str(v)) for k, v in params.items()],
        )
        client.log_text(run_id, record.system_prompt, "prompt.txt")
        client.set_terminated(run_id, status="FAILED" if record.failed else "FINISHED")
        if record.is_best:
            self.incumbent = record.system_prompt
        return str(run_id)


def description(config: RunConfig) -> str:
    """The run's description: what was optimized, on what, with what."""
    lines = [
        f"aevyra-reflex **{config.strategy}** prompt optimization of "
        f"`{', '.join(config.models)}` on dataset `{config.dataset_name or 'dataset'}` "
        f"({config.dataset_size} rows), metrics: {', '.join(config.metrics) or 'none'}.",
        "",
        f"reflex run id `{config.run_id}` (run directory `{config.run_dir}`).",
        "Per iteration: `score_train`, `score_val`; test split: `score_test` at step 0 "
        "(baseline) and after the last iteration (final). Per-example test rows: "
        "artifact `evaluation.json`; iterations: `iterations.json`.",
    ]
    return "\n".join(lines)


def log_dataset_inputs(
    client: MlflowClient,
    run_id: str,
    run_dir: str | None,
    name: str,
    dataset: Dataset | None,
) -> bool:
    """Log the run's train/val/test splits (its ``splits.json``) as dataset inputs, with the
    rows' input and reference when ``dataset`` is given; True when something was logged."""
    splits_file = Path(run_dir) / "splits.json" if run_dir else None
    if splits_file is None or not splits_file.exists():
        return False
    splits: dict[str, list[str]] = json.loads(splits_file.read_text(encoding="utf-8"))
    rows = {example.id: example for example in dataset} if dataset is not None else None
    inputs = []
    for split, ids in splits.items():
        if not ids:
            continue
        frame = (
            pd.DataFrame({"id": ids})
            if rows is None
            else pd.DataFrame(
                [
                    {"id": i, "input": rows[i].input, "ideal": rows[i].ideal or ""}
                    for i in ids
                    if i in rows
                ]
            )
        )
        entity = from_pandas(frame, name=name)._to_mlflow_entity()
        inputs.append(DatasetInput(entity, tags=[InputTag(MLFLOW_DATASET_CONTEXT, split)]))
    if inputs:
        client.log_inputs(run_id, datasets=inputs)
    return bool(inputs)


def log_request_settings(
    client: MlflowClient, run_id: str, config: RunConfig, urls: Sequence[str | None]
) -> None:
    """The run's tools and response format whole, as artifacts (the params hold their
    names and digests): what every task request carried besides the prompt."""
    if config.tools:
        clean = redact_data({"tools": config.tools}, *urls)["tools"]
        client.log_dict(run_id, clean, "tools.json")
    if config.response_format:
        client.log_dict(run_id, redact_data(config.response_format, *urls), "response_format.json")


def log_result_tables(
    client: MlflowClient,
    run_id: str,
    result: OptimizationResult,
    dataset: Dataset | None,
    urls: Sequence[str | None],
) -> None:
    """The per-example evaluation table and a label task's confusion matrices."""
    rows = evaluation_rows(result, dataset)
    if rows:
        clean = redact_data({"rows": rows}, *urls)["rows"]
        write_table(client, run_id, EVALUATION_TABLE, clean)
    for side, matrix in confusion_matrices(result, dataset).items():
        rows = redact_data({"rows": matrix.rows()}, *urls)["rows"]
        write_table(client, run_id, CONFUSION_TABLE.format(side=side), rows)
