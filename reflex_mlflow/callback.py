"""``MLflowCallback``: one reflex run becomes one MLflow run (params, metric curves, artifacts).

It talks to MLflow through an ``MlflowClient`` bound to one run id, so it never touches the
caller's active fluent run. Every MLflow call is guarded: a failure is a warning and the
optimization goes on; if the run cannot even be created (server down, broken store), the
callback switches itself off for the rest of the run. See docs/trackers.md for what is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mlflow
from mlflow import MlflowClient
from mlflow.tracking.context.registry import resolve_tags

from reflex.api import EvalLabel
from reflex.api.tracking import (
    INITIAL_VAL_LABEL,
    RUN_END_SERIES,
    RunningTotals,
    baseline_metrics,
    iteration_metrics,
    iteration_row,
    recorded_initial_val,
    recorded_iterations,
    redact_data,
    redacted_argv,
    run_params,
    run_path,
    run_tags,
    save_tracker_state,
    split_params,
    split_summary,
    summary_metrics,
    tracker_state,
)
from reflex_mlflow.base import PARAM_LIMIT, MLflowRun
from reflex_mlflow.connection import check_reachable, shown
from reflex_mlflow.evaluations import RowEvaluations
from reflex_mlflow.history import read_table, taken_steps
from reflex_mlflow.registry import experiment_id, register_best
from reflex_mlflow.row_traces import BASELINE, FINAL, RowTraces
from reflex_mlflow.tracing import LlmTracing
from reflex_mlflow.views import (
    ChildRuns,
    description,
    log_dataset_inputs,
    log_request_settings,
    log_result_tables,
    write_table,
)

if TYPE_CHECKING:
    from reflex.api import Dataset, EvalSnapshot, IterationRecord, OptimizationResult, RunConfig

__all__ = ["MLflowCallback"]

logger = logging.getLogger(__name__)

TABLE = "iterations.json"


class MLflowCallback(MLflowRun):
    """Log a reflex run to MLflow.

    With nothing set it uses MLflow's own default (``MLFLOW_TRACKING_URI``, else
    ``sqlite:///mlflow.db`` in the working directory; open it with ``mlflow ui``).
    ``register_prompt`` names a prompt in the MLflow prompt registry: the best prompt is
    registered as a new version and linked to the run. ``run_id`` continues an existing MLflow
    run (e.g. when resuming): its steps continue after the last logged iteration.
    ``dataset`` (optional) adds the rows' input and reference to the logged dataset inputs.
    ``trace_llm_calls`` records one MLflow trace per LiteLLM call, linked to the run (it sets
    the process-wide tracking URI to this callback's, which MLflow tracing requires).
    ``child_runs`` adds one nested MLflow run per evaluated candidate under the run.
    ``row_traces`` (on by default) writes each row of the baseline and final test evaluations
    and of the winner's val evaluation as an MLflow trace with its scores as assessments, in
    one evaluation run per evaluation under the run (:mod:`reflex_mlflow.row_traces`); turn it
    off for very large test splits.
    """

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
        child_runs: bool = False,
        row_traces: bool = True,
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
        self._dataset_name = "dataset"
        self._inputs_logged = False
        self.trace_llm_calls = trace_llm_calls
        self._tracing: LlmTracing | None = None
        self.child_runs = child_runs
        self._children: ChildRuns | None = None
        self.row_traces = row_traces
        self._rows_log: RowTraces | None = None
        self.experiment_id: str | None = None
        self.resolved_uri: str | None = None
        self._run_dir: Path | None = None
        self._logged_steps: set[int] = set()
        self._baseline_logged = False
        self._offset = 0  # steps of an earlier reflex run this MLflow run continues (run_id=)
        self._running = RunningTotals()  # best_score_*, total_* after each iteration
        self._taken: dict[int, set[str]] = {}  # a continued run's earlier run-end points

    # --- lifecycle hooks (each one guarded) ------------------------------------------------

    def on_baseline(self, snapshot: EvalSnapshot) -> None:
        self._safely("on_baseline", lambda: self._baseline(snapshot))
        if self._rows_log is not None and not self._off:
            self._rows_log.evaluation("on_baseline", BASELINE, snapshot)

    def on_iteration(self, record: IterationRecord) -> None:
        self._safely("on_iteration", lambda: self._iteration(record))
        if self._rows_log is not None:
            self._rows_log.iteration(record)

    def on_evaluation_end(self, label: EvalLabel, snapshot: EvalSnapshot) -> None:
        # Logs the initial val only; others make no call (so they skip _safely's breaker reset).
        if label == INITIAL_VAL_LABEL:
            self._safely("on_evaluation_end", lambda: self._initial_val(snapshot.mean_score))
        if self._rows_log is not None:
            self._rows_log.val(label, snapshot)  # kept until the winner is known: no call

    def on_final(self, snapshot: EvalSnapshot) -> None:
        # One step past the last iteration, so the final point never sits inside the curve.
        step = self._last_step + 1
        self._safely("on_final", lambda: self._log_new_metrics(baseline_metrics(snapshot), step))
        if self._rows_log is not None and not self._off:
            self._rows_log.evaluation("on_final", FINAL, snapshot)

    def on_run_end(self, result: OptimizationResult) -> None:
        self._safely("on_run_end", lambda: self._log_end(result))
        if self._rows_log is not None and not self._off:
            self._rows_log.winner("on_run_end", result)
        self._safely("on_run_end", lambda: self._terminate("FINISHED"))

    def on_run_error(self, error: BaseException, partial: OptimizationResult | None) -> None:
        if partial is not None:
            self._safely("on_run_error", lambda: self._log_end(partial))
        message = self._scrub(f"{type(error).__name__}: {error}")[:PARAM_LIMIT]
        self._safely("on_run_error", lambda: self._set_tags({"reflex.error": message}))
        status = "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED"  # Ctrl-C
        self._safely("on_run_error", lambda: self._terminate(status))

    def _start(self, config: RunConfig, initial_prompt: str) -> None:
        uri = self.tracking_uri or mlflow.get_tracking_uri()
        check_reachable(uri)
        client = MlflowClient(tracking_uri=uri)
        tags = run_tags(config, self.tags)
        self._run_dir = run_path(config)
        if self.run_id is None and config.resumed:
            # A resumed reflex run continues the MLflow run it started: the id it saved in the
            # run directory, else the run found by its reflex.run_id tag.
            state = tracker_state(self._run_dir, "mlflow")
            saved = state.get("run_id") if state.get("tracking_uri") == shown(uri) else None
            self.run_id = saved or (self._find_run(client, config.run_id or ""))
            self._resume = self.run_id is not None
        if self.run_id is not None:
            client.update_run(self.run_id, status="RUNNING")
            self.experiment_id = client.get_run(self.run_id).info.experiment_id
        else:
            self.experiment_id = self._experiment(client)
            name = self.run_name or _default_name(config)
            with redacted_argv(*self._urls):  # mlflow.source.name is the command's argv[0]
                context = resolve_tags(tags)
            run = client.create_run(self.experiment_id, tags=context, run_name=name)
            self.run_id = run.info.run_id
        self.client, self.resolved_uri = client, uri
        if config.resumed:  # its val:baseline was measured before: no live hook will say it
            self._initial_val(recorded_initial_val(self._run_dir))
        save_tracker_state(
            self._run_dir,
            "mlflow",
            run_id=self.run_id,
            experiment_id=self.experiment_id,
            tracking_uri=shown(uri),
        )
        self._dataset_name = config.dataset_name or "dataset"
        self._set_tags({**tags, "mlflow.note.content": self._scrub(description(config))})
        self._log_params(run_params(config, initial_prompt))
        if self.child_runs:
            self._children = ChildRuns(client, self.experiment_id, self.run_id, initial_prompt)
        if self._resume and not config.resumed:  # another reflex run: steps go after its own
            self._offset = max(
                (m.step for m in client.get_metric_history(self.run_id, "tokens")), default=0
            )
            self._last_step = self._offset
            self._taken = taken_steps(client, str(self.run_id), RUN_END_SERIES, self._offset)
            self._load_previous_table(client, self.run_id)
        elif self._resume:
            self._catch_up(client, self.run_id)
        else:
            client.log_text(self.run_id, initial_prompt, "prompts/initial_prompt.txt")
            log_request_settings(client, str(self.run_id), config, self._urls)
        if self.row_traces:
            self._rows_log = self._row_traces(client, config)
        if self.trace_llm_calls:
            self._tracing = LlmTracing(uri, self.run_id, self._urls)
            self._tracing.start()
        self._inputs_logged = self._resume  # a continued run has its inputs already
        if self._run_dir is not None and not self._resume:  # splits.json exists already
            self._log_dataset_inputs(str(self._run_dir))

    def _row_traces(self, client: MlflowClient, config: RunConfig) -> RowTraces:
        writer = RowEvaluations(
            client,
            str(self.experiment_id),
            str(self.run_id),
            prompt_mode=config.prompt_mode,
            urls=self._urls,
            parallel=config.max_workers if self._is_http() else 1,
            reflex_run_id=config.run_id or "",
        )
        return RowTraces(
            writer,
            self._attempt,
            run_dir=self._run_dir,
            dataset=self.dataset,
            batch=config.max_workers,
        )

    def _experiment(self, client: MlflowClient) -> str:
        return experiment_id(client, self.experiment_name)  # safe when runs start together

    def _find_run(self, client: MlflowClient, reflex_run_id: str) -> str | None:
        experiment = client.get_experiment_by_name(self.experiment_name)
        if experiment is None or not reflex_run_id:
            return None
        runs = client.search_runs(
            [experiment.experiment_id],
            filter_string=f"tags.`reflex.run_id` = '{reflex_run_id}'",
            max_results=1,
        )
        return runs[0].info.run_id if runs else None

    def _catch_up(self, client: MlflowClient, run_id: str) -> None:
        """Continue an existing run: log each iteration the run directory recorded but this run
        lacks (e.g. the one in flight at a kill -9), and rebuild the iterations table."""
        self._logged_steps = {m.step for m in client.get_metric_history(run_id, "tokens")}
        baseline = client.get_metric_history(run_id, "score_test")
        self._baseline_logged = any(m.step == 0 for m in baseline)
        self._last_step = max(self._logged_steps, default=0)
        self._taken = taken_steps(client, run_id, RUN_END_SERIES, self._last_step)
        recorded = recorded_iterations(self._run_dir)
        if recorded:
            for record in recorded:
                self._rows.append(iteration_row(record))
                self._running.add(record)  # the running series go on from the whole record
                if record.iteration not in self._logged_steps:
                    self._log_iteration(record)
            self._write_table()
        else:
            self._load_previous_table(client, run_id)

    def _load_previous_table(self, client: MlflowClient, run_id: str) -> None:
        self._rows = read_table(client, run_id, TABLE)

    def _initial_val(self, score: float | None) -> None:
        """The initial prompt's val score: ``score_val`` at step 0 (the val curve's start) and
        the start of the running best val (``best_score_val``)."""
        if score is not None:
            self._running.seed_val(score)
            self._log_new_metrics({"score_val": score}, 0)  # once, on a resume or a replay

    def _baseline(self, snapshot: EvalSnapshot) -> None:
        if not self._baseline_logged:  # a resumed run's baseline may be on record already
            self._log_metrics(baseline_metrics(snapshot), 0)
            self._baseline_logged = True

    def _iteration(self, record: IterationRecord) -> None:
        if self._offset:
            record = replace(record, iteration=record.iteration + self._offset)
        if record.iteration in self._logged_steps:
            return  # already logged (a resumed run's catch-up)
        self._rows.append(iteration_row(record))
        self._log_iteration(record)
        self._write_table()

    def _log_iteration(self, record: IterationRecord) -> None:
        self._last_step = max(self._last_step, record.iteration)
        taken = self._taken.get(record.iteration, set())  # a continued run's earlier end points
        running = {k: v for k, v in self._running.add(record).items() if k not in taken}
        self._log_metrics({**iteration_metrics(record), **running}, record.iteration)
        self._logged_steps.add(record.iteration)
        if self._children is not None:
            self._children.candidate(record)
        if self.log_prompt_each_iter:
            client, run_id = self._run()
            name = f"iter_{record.iteration:03d}.txt"
            client.log_text(run_id, record.system_prompt, f"prompts/{name}")
            client.log_text(run_id, record.reasoning, f"reasoning/{name}")

    def _log_end(self, result: OptimizationResult) -> None:
        client, run_id = self._run()
        self._log_params(split_params(result))
        # series end past the last iteration; step 0 is drawn as a bar (one point: a dot)
        series, once = split_summary(summary_metrics(result))
        self._log_new_metrics(series, self._last_step + 1)
        self._log_new_metrics(once, 0)
        note = result.improvement_pct_note
        self._set_tags(
            {
                "reflex.run_id": result.run_id or "",
                "reflex.stop_reason": self._scrub(result.stop_reason)[:PARAM_LIMIT],
                "reflex.completed": str(result.completed).lower(),
                **({"reflex.improvement_pct_note": note} if note else {}),
            }
        )
        name = f"prompts/best_prompt_{result.run_id or run_id}.txt"
        client.log_text(run_id, result.best_prompt, name)
        client.log_dict(run_id, redact_data(result.to_dict(), *self._urls), "result.json")
        log_result_tables(client, run_id, result, self.dataset, self._urls)
        if not self._inputs_logged:
            self._log_dataset_inputs(result.run_dir)
        if result.completed:  # under register_prompt, else the prompts:/ name it started from
            self._register(result)

    def _terminate(self, status: str) -> None:
        if self._tracing is not None:
            tracing, self._tracing = self._tracing, None
            tracing.stop(status)
        client, run_id = self._run()
        client.set_terminated(run_id, status=status)

    # --- MLflow helpers ----------------------------------------------------------------------

    def _write_table(self) -> None:
        """Rewrite ``iterations.json`` whole (log_table would download and append each time)."""
        client, run_id = self._run()
        write_table(client, run_id, TABLE, self._rows)

    def _log_dataset_inputs(self, run_dir: str | None) -> None:
        """The train/val/test splits as dataset inputs (fills the UI's Dataset column)."""
        client, run_id = self._run()
        if log_dataset_inputs(client, run_id, run_dir, self._dataset_name, self.dataset):
            self._inputs_logged = True

    def _register(self, result: OptimizationResult) -> None:
        register_best(*self._run(), self.register_prompt, result)


def _default_name(config: RunConfig) -> str:
    """``<strategy>-<dataset>-<reflex run id>``: a run name that says what ran, and where."""
    parts = [config.strategy, config.dataset_name or "", config.run_id or ""]
    return "-".join(part for part in parts if part)
