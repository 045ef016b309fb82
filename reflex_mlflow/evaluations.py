"""Per-row evaluations in MLflow: each evaluated row a trace with assessments, as
``mlflow.genai.evaluate`` leaves them, so MLflow's evaluation view lists and compares them.

Each evaluation (``test:baseline``, ``test:final``, ``val:winner``) gets a child run of the reflex
run of MLflow's evaluation type (``mlflow.runType=genai_evaluate``, what ``mlflow.genai.evaluate``
tags its run with), holding the evaluation's mean scores (``<metric>/mean``, as evaluate logs
them) and the evaluated prompt; each row's trace (:mod:`reflex_mlflow.rows`) is written in it and
linked to it and to the reflex run. Two evaluation runs of the same rows pair row by row in
MLflow's comparison; a final row's ``reflex.change`` tag says whether it flipped.

Traces are written as MLflow's exporter writes them (``log_spans``, then ``start_trace`` with the
assessments), with a client bound to the callback's tracking URI: MLflow's exporter goes to the
process-wide URI and swallows a failure, which would hide an outage from the callback's breaker.
Rows go in batches of ``--max-workers`` (one ``log_spans`` and two link requests per batch; the
``start_trace`` requests of a batch in parallel on an HTTP server). A written row carries its
``reflex.row`` tag: a resumed run or ``aevyra-reflex sync`` writes only the rows missing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from mlflow import MlflowClient
from mlflow.entities import Metric, RunTag
from mlflow.tracing.client import TracingClient
from mlflow.utils.mlflow_tags import (
    MLFLOW_PARENT_RUN_ID,
    MLFLOW_RUN_NAME,
    MLFLOW_RUN_TYPE,
    MLFLOW_RUN_TYPE_GENAI_EVALUATE,
)

from reflex.api.tracking import metric_key, prompt_messages, redact_data
from reflex_mlflow.rows import RowTrace, row_trace

if TYPE_CHECKING:
    from reflex.api import EvalSnapshot, Example, Sample

__all__ = ["EVALUATION_TAG", "ROW_TAG", "RowEvaluations", "batches"]

EVALUATION_TAG = "reflex.evaluation"  # on the evaluation run and on each of its traces
ROW_TAG = "reflex.row"  # a trace's row: example id @ model
CHANGE_TAG = "reflex.change"  # a final row against the baseline: regressed, improved, ...
_LINK_LIMIT = 100  # MLflow links at most 100 traces per request
_PAGE = 500


def batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """``items`` in slices of ``size`` (at least 1, and at most MLflow's link limit)."""
    size = max(1, min(size, _LINK_LIMIT))
    for start in range(0, len(items), size):
        yield items[start : start + size]


class RowEvaluations:
    """Writes the rows of a reflex run's evaluations as traces in evaluation runs under it.

    ``urls``: the run's URLs whose credentials no trace may hold. ``parallel``: write a batch's
    traces from that many threads (an HTTP server; a local store is written from one thread).
    """

    def __init__(
        self,
        client: MlflowClient,
        experiment_id: str,
        run_id: str,
        *,
        prompt_mode: str = "replace",
        urls: Sequence[str | None] = (),
        parallel: int = 1,
        reflex_run_id: str = "",
    ) -> None:
        self.client = client
        self.tracing = TracingClient(client.tracking_uri)
        self.experiment_id = experiment_id
        self.run_id = run_id
        self.prompt_mode = prompt_mode
        self.urls = tuple(urls)
        self.parallel = max(1, parallel)
        self.reflex_run_id = reflex_run_id

    def open(self, label: str, snapshot: EvalSnapshot) -> tuple[str, bool]:
        """The evaluation run of ``label`` and whether it is new: the one this reflex run has
        (a resume, a sync), else a new one with the evaluation's mean scores and its prompt."""
        found = self.client.search_runs(
            [self.experiment_id],
            filter_string=(
                f"tags.`{MLFLOW_PARENT_RUN_ID}` = '{self.run_id}' "
                f"and tags.`{EVALUATION_TAG}` = '{label}'"
            ),
            max_results=1,
        )
        if found:
            return str(found[0].info.run_id), False
        tags = {
            MLFLOW_PARENT_RUN_ID: self.run_id,
            MLFLOW_RUN_TYPE: MLFLOW_RUN_TYPE_GENAI_EVALUATE,
            MLFLOW_RUN_NAME: label,
            EVALUATION_TAG: label,  # no reflex.run_id: that tag finds the reflex run itself
        }
        run = self.client.create_run(self.experiment_id, tags=tags, run_name=label)
        run_id = str(run.info.run_id)
        metrics = {f"{metric_key(k)}/mean": v for k, v in snapshot.scores_by_metric.items()}
        metrics["score/mean"] = snapshot.mean_score
        entities = [Metric(k, float(v), _now_ms(), 0) for k, v in metrics.items()]
        tag = [RunTag(EVALUATION_TAG, label)]
        self.client.log_batch(run_id, metrics=entities, tags=tag)
        self.client.log_text(run_id, snapshot.system_prompt, "prompt.txt")
        self.client.set_terminated(run_id, "FINISHED")
        return run_id, True

    def logged(self, eval_run_id: str) -> set[str]:
        """The rows already written in ``eval_run_id`` (their ``reflex.row`` tags)."""
        keys: set[str] = set()
        token: str | None = None
        while True:
            page = self.client.search_traces(
                locations=[self.experiment_id],
                run_id=eval_run_id,
                include_spans=False,
                max_results=_PAGE,
                page_token=token,
            )
            keys.update(t.info.tags.get(ROW_TAG, "") for t in page)
            token = page.token
            if not token:
                return keys - {""}

    def traces(
        self,
        eval_run_id: str,
        label: str,
        samples: Sequence[Sample],
        examples: Mapping[str, Example],
        prompt: str,
        changes: Mapping[str, str] | None = None,
    ) -> list[RowTrace]:
        """The rows' traces, built in memory (credentials scrubbed)."""
        built = []
        for sample in samples:
            example = examples.get(sample.example_id)
            messages = (
                prompt_messages(prompt, example, _mode(self.prompt_mode))
                if example is not None and sample.latency_ms is not None
                else None
            )
            tags = {
                EVALUATION_TAG: label,
                ROW_TAG: sample.key,
                "reflex.example_id": sample.example_id,
            }
            if changes is not None and sample.key in changes:
                tags[CHANGE_TAG] = changes[sample.key]
            if self.reflex_run_id:
                tags["reflex.run_id"] = self.reflex_run_id
            clean = (
                redact_data({"messages": messages}, *self.urls)["messages"] if messages else None
            )
            built.append(row_trace(self.experiment_id, eval_run_id, sample, example, clean, tags))
        return built

    def write(self, eval_run_id: str, rows: Sequence[RowTrace]) -> None:
        """One batch: its spans in one request, each trace's info (with its assessments), then
        the links to the evaluation run and to the reflex run. Raises on the first failure."""
        self.tracing.log_spans(self.experiment_id, [s for row in rows for s in row.spans])
        self._each(self.tracing.start_trace, [row.info for row in rows])
        ids = [row.info.trace_id for row in rows]
        self.client.link_traces_to_run(ids, eval_run_id)
        self.client.link_traces_to_run(ids, self.run_id)

    def _each(self, action: Callable[[Any], object], items: Sequence[Any]) -> None:
        if self.parallel == 1 or len(items) == 1:
            for item in items:
                action(item)
            return
        with ThreadPoolExecutor(min(self.parallel, len(items))) as pool:
            for _ in pool.map(action, items):  # re-raises the first failure
                pass


def _mode(mode: str) -> Any:
    return "prepend" if mode == "prepend" else "replace"


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)
