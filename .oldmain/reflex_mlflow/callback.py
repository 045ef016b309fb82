"""``MLflowCallback``: one reflex run becomes one MLflow run (params, metric curves, artifacts).

It talks to MLflow through an ``MlflowClient`` bound to one run id, so it never touches the
caller's active fluent run. Every MLflow call is guarded: a failure is a warning and the
optimization goes on; if the run cannot even be created (server down, broken store), the
callback switches itself off for the rest of the run. See docs/trackers.md for what is logged.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import mlflow
import pandas as pd
from mlflow import MlflowClient
from mlflow.data.pandas_dataset import from_pandas
from mlflow.entities import DatasetInput, InputTag, Metric, Param, RunTag
from mlflow.tracking.context.registry import resolve_tags
from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT, MLFLOW_LOGGED_ARTIFACTS

from reflex.api import (
    GuardedCallback,
    ParamValue,
    baseline_metrics,
    iteration_metrics,
    iteration_row,
    redact_data,
    redact_url,
    run_params,
    run_tags,
    split_params,
    summary_metrics,
)
from reflex_mlflow.tracing import LlmTracing

if TYPE_CHECKING:
    from reflex.api import Dataset, EvalSnapshot, IterationRecord, OptimizationResult, RunConfig

__all__ = ["MLflowCallback"]

logger = logging.getLogger(__name__)

TABLE = "iterations.json"
_PARAM_LIMIT = 6000  # MLflow rejects longer param values
_BATCH = 100  # MLflow's per-request limit for params
_CONNECT_TIMEOUT_S = 3.0


class MLflowCallback(GuardedCallback):
    """Log a reflex run to MLflow.

    With nothing set it uses MLflow's own default (``MLFLOW_TRACKING_URI``, else
    ``sqlite:///mlflow.db`` in the working directory; open it with ``mlflow ui``).
    ``register_prompt`` names a prompt in the MLflow prompt registry: the best prompt is
    registered as a new version and linked to the run. ``run_id`` continues an existing MLflow
    run (e.g. when resuming): its steps continue after the last logged iteration.
    ``dataset`` (optional) adds the rows' input and reference to the logged dataset inputs.
    ``trace_llm_calls`` records one MLflow trace per LiteLLM call, linked to the run (it sets
    the process-wide tracking URI to this callback's, which MLflow tracing requires).
    """

    tracker = "MLflow"

    def __init__(
        self,
        run_name: str | None = None,
        tracking_uri: str | None = None,
        experiment_name: str = "aevyra-reflex",
        tags: Mapping[str, str] | None = None,
        log_prompt_each_iter: bool = False,
        *,
        register_prompt: str | None = None,
        run_id: str | None = None,
        dataset: Dataset | None = None,
        trace_llm_calls: bool = False,
    ) -> None:
        self.run_name = run_name
        self.tracking_uri = tracking_uri
        self.experiment_name = experiment_name
        self.tags = dict(tags or {})
        self.log_prompt_each_iter = log_prompt_each_iter
        self.register_prompt = register_prompt
        self.run_id = run_id
        self.dataset = dataset
        self.client: MlflowClient | None = None
        self._resume = run_id is not None
        self._off = False
        self._last_step = 0
        self._rows: list[dict[str, Any]] = []
        self._table_marked = False
        self._dataset_name = "dataset"
        self._inputs_logged = False
        self.trace_llm_calls = trace_llm_calls
        self._tracing: LlmTracing | None = None

    # --- lifecycle hooks (each one guarded) ------------------------------------------------

    def on_baseline(self, snapshot: EvalSnapshot) -> None:
        self._safely("on_baseline", lambda: self._log_metrics(baseline_metrics(snapshot), 0))

    def on_iteration(self, record: IterationRecord) -> None:
        self._safely("on_iteration", lambda: self._iteration(record))

    def on_final(self, snapshot: EvalSnapshot) -> None:
        # One step past the last iteration, so the final point never sits inside the curve.
        step = self._last_step + 1
        self._safely("on_final", lambda: self._log_metrics(baseline_metrics(snapshot), step))

    def on_run_end(self, result: OptimizationResult) -> None:
        self._safely("on_run_end", lambda: self._log_end(result))
        self._safely("on_run_end", lambda: self._terminate("FINISHED"))

    def on_run_error(self, error: BaseException, partial: OptimizationResult | None) -> None:
        if partial is not None:
            self._safely("on_run_error", lambda: self._log_end(partial))
        message = self._scrub(f"{type(error).__name__}: {error}")[:_PARAM_LIMIT]
        self._safely("on_run_error", lambda: self._set_tags({"reflex.error": message}))
        status = "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED"  # Ctrl-C
        self._safely("on_run_error", lambda: self._terminate(status))

    # --- steps -------------------------------------------------------------------------------

    def _has_run(self) -> bool:
        return self.client is not None and self.run_id is not None

    def _tracker_urls(self) -> tuple[str | None, ...]:
        return (self.tracking_uri,)

    def _start(self, config: RunConfig, initial_prompt: str) -> None:
        uri = self.tracking_uri or mlflow.get_tracking_uri()
        _check_reachable(uri)
        client = MlflowClient(tracking_uri=uri)
        tags = run_tags(config, self.tags)
        if self.run_id is None and config.resumed and config.run_id:
            # A resumed reflex run continues the MLflow run it started, found by its tag.
            self.run_id = self._find_run(client, config.run_id)
            self._resume = self.run_id is not None
        if self.run_id is not None:
            client.update_run(self.run_id, status="RUNNING")
            self._load_previous(client, self.run_id)
        else:
            experiment = client.get_experiment_by_name(self.experiment_name)
            experiment_id = (
                experiment.experiment_id
                if experiment is not None
                else client.create_experiment(self.experiment_name)
            )
            run = client.create_run(experiment_id, tags=resolve_tags(tags), run_name=self.run_name)
            self.run_id = run.info.run_id
        self.client = client
        self._dataset_name = config.dataset_name or "dataset"
        self._set_tags(tags)
        self._log_params(run_params(config))
        client.log_text(self.run_id, initial_prompt, "prompts/initial_prompt.txt")
        if self.trace_llm_calls:
            self._tracing = LlmTracing(uri, self.run_id, self._urls)
            self._tracing.start()
        self._inputs_logged = self._resume  # a continued run has its inputs already
        if config.run_id and not self._resume:  # the engine wrote splits.json before this hook
            self._log_dataset_inputs(str(Path(config.run_dir) / "runs" / config.run_id))

    def _find_run(self, client: MlflowClient, reflex_run_id: str) -> str | None:
        experiment = client.get_experiment_by_name(self.experiment_name)
        if experiment is None:
            return None
        runs = client.search_runs(
            [experiment.experiment_id],
            filter_string=f"tags.`reflex.run_id` = '{reflex_run_id}'",
            max_results=1,
        )
        return runs[0].info.run_id if runs else None

    def _load_previous(self, client: MlflowClient, run_id: str) -> None:
        """Continue an existing run: steps after its last iteration, its table rows kept."""
        history = client.get_metric_history(run_id, "score_train")
        self._last_step = max((m.step for m in history), default=0)
        if any(f.path == TABLE for f in client.list_artifacts(run_id)):
            with tempfile.TemporaryDirectory() as tmp:
                local = client.download_artifacts(run_id, TABLE, tmp)
                table = json.loads(Path(local).read_text(encoding="utf-8"))
            columns = table["columns"]
            self._rows = [dict(zip(columns, row, strict=True)) for row in table["data"]]
            self._table_marked = True

    def _iteration(self, record: IterationRecord) -> None:
        self._last_step = max(self._last_step, record.iteration)
        self._log_metrics(iteration_metrics(record), record.iteration)
        self._rows.append(iteration_row(record))
        self._write_table()
        if self.log_prompt_each_iter:
            client, run_id = self._run()
            name = f"iter_{record.iteration:03d}.txt"
            client.log_text(run_id, record.system_prompt, f"prompts/{name}")
            client.log_text(run_id, record.reasoning, f"reasoning/{name}")

    def _log_end(self, result: OptimizationResult) -> None:
        client, run_id = self._run()
        self._log_params(split_params(result))
        self._log_metrics(summary_metrics(result), self._last_step + 1)
        self._set_tags(
            {
                "reflex.run_id": result.run_id or "",
                "reflex.stop_reason": self._scrub(result.stop_reason)[:_PARAM_LIMIT],
                "reflex.completed": str(result.completed).lower(),
            }
        )
        name = f"prompts/best_prompt_{result.run_id or run_id}.txt"
        client.log_text(run_id, result.best_prompt, name)
        client.log_dict(run_id, redact_data(result.to_dict(), *self._urls), "result.json")
        if not self._inputs_logged:
            self._log_dataset_inputs(result.run_dir)
        if self.register_prompt and result.completed:
            self._register(result)

    def _terminate(self, status: str) -> None:
        if self._tracing is not None:
            tracing, self._tracing = self._tracing, None
            tracing.stop(status)
        client, run_id = self._run()
        client.set_terminated(run_id, status=status)

    # --- MLflow helpers ----------------------------------------------------------------------

    def _run(self) -> tuple[MlflowClient, str]:
        if self.client is None or self.run_id is None:
            raise RuntimeError("no MLflow run: on_run_start did not complete")
        return self.client, self.run_id

    def _log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        client, run_id = self._run()
        now = int(time.time() * 1000)
        entities = [Metric(key, float(value), now, step) for key, value in metrics.items()]
        client.log_batch(run_id, metrics=entities)

    def _log_params(self, params: Mapping[str, ParamValue]) -> None:
        client, run_id = self._run()
        existing = client.get_run(run_id).data.params if self._resume else {}
        # Params are immutable in MLflow: a continued run keeps the values it started with.
        entities = [
            Param(key, str(value)[:_PARAM_LIMIT])
            for key, value in params.items()
            if key not in existing
        ]
        for start in range(0, len(entities), _BATCH):
            client.log_batch(run_id, params=entities[start : start + _BATCH])

    def _set_tags(self, tags: Mapping[str, str]) -> None:
        client, run_id = self._run()
        client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()])

    def _write_table(self) -> None:
        """Rewrite ``iterations.json`` whole (log_table would download and append each time)."""
        client, run_id = self._run()
        frame = pd.DataFrame(self._rows)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, TABLE)
            # The same pandas "split" JSON that mlflow.log_table writes, so load_table reads it.
            frame.to_json(path, orient="split", index=False)
            client.log_artifact(run_id, path)
        if not self._table_marked:
            # This tag is how the MLflow UI knows the artifact is a table.
            logged = json.loads(client.get_run(run_id).data.tags.get(MLFLOW_LOGGED_ARTIFACTS, "[]"))
            entry = {"path": TABLE, "type": "table"}
            if entry not in logged:
                self._set_tags({MLFLOW_LOGGED_ARTIFACTS: json.dumps([*logged, entry])})
            self._table_marked = True

    def _log_dataset_inputs(self, run_dir: str | None) -> None:
        """The train/val/test splits as dataset inputs (fills the UI's Dataset column)."""
        if not run_dir:
            return
        splits_file = Path(run_dir) / "splits.json"
        if not splits_file.exists():
            return
        splits: dict[str, list[str]] = json.loads(splits_file.read_text(encoding="utf-8"))
        client, run_id = self._run()
        inputs = []
        for split, ids in splits.items():
            if not ids:
                continue
            dataset = from_pandas(self._split_frame(ids), name=self._dataset_name)
            context = [InputTag(MLFLOW_DATASET_CONTEXT, split)]
            inputs.append(DatasetInput(dataset._to_mlflow_entity(), tags=context))
        if inputs:
            client.log_inputs(run_id, datasets=inputs)
            self._inputs_logged = True

    def _split_frame(self, ids: list[str]) -> pd.DataFrame:
        if self.dataset is None:
            return pd.DataFrame({"id": ids})
        rows = {example.id: example for example in self.dataset}
        return pd.DataFrame(
            [
                {"id": i, "input": rows[i].input, "ideal": rows[i].ideal or ""}
                for i in ids
                if i in rows
            ]
        )

    def _register(self, result: OptimizationResult) -> None:
        """Register the best prompt as a new version and link that version to the run."""
        assert self.register_prompt is not None
        client, run_id = self._run()
        final = result.final.mean_score if result.final is not None else None
        version = client.register_prompt(
            self.register_prompt,
            template=result.best_prompt,
            commit_message=f"aevyra-reflex run {result.run_id}: test score {final}",
            tags={"reflex.run_id": result.run_id or "", "mlflow.run_id": run_id},
        )
        client.link_prompt_version_to_run(run_id, version)


def _check_reachable(uri: str) -> None:
    """Fail fast on a tracking server that is down (MLflow itself retries for minutes)."""
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return
    if any(
        os.environ.get(name) for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
    ):
        return  # the proxy, not us, decides what is reachable
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=_CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ConnectionError(
            f"MLflow tracking server {redact_url(uri)} is unreachable ({exc}); start it "
            "(mlflow server) or point --mlflow-tracking-uri / MLFLOW_TRACKING_URI elsewhere"
        ) from None
