"""``WandbCallback``: one reflex run becomes one W&B run (config, curves, summary, artifact).

Metrics are logged against an explicit ``iteration`` axis (``define_metric``): the baseline test
and val scores at iteration 0, each iteration's train/val scores at its number, and the final
test score one step past the last iteration. Every W&B call is guarded: a failure is a warning
and the optimization goes on. See docs/trackers.md for what is logged.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import wandb

from reflex.api import EvalLabel
from reflex.api.tracking import (
    INITIAL_VAL_LABEL,
    GuardedCallback,
    RunningTotals,
    baseline_metrics,
    confusion_matrices,
    evaluation_rows,
    iteration_metrics,
    iteration_row,
    recorded_initial_val,
    recorded_iterations,
    redact_data,
    redacted_argv,
    run_params,
    run_path,
    save_tracker_state,
    split_params,
    summary_metrics,
    tracker_state,
)
from reflex_wandb.aliases import ARTIFACT, prompt_artifact
from reflex_wandb.offline import logged_artifacts, logged_keys

if TYPE_CHECKING:
    from reflex.api import EvalSnapshot, IterationRecord, OptimizationResult, RunConfig

__all__ = ["WandbCallback", "side_rows"]

_TABLE_COLUMNS = ["iteration", "score", "val_score", "prompt", "reasoning", "race"]


class WandbCallback(GuardedCallback):
    """Log a reflex run to Weights & Biases.

    ``mode`` is W&B's: ``"online"``, ``"offline"`` (writes locally with no network or API key;
    upload later with ``wandb sync``) or ``"disabled"``; ``None`` lets W&B decide
    (``WANDB_MODE``, else online). ``run_id`` continues an existing W&B run (``resume="allow"``).
    ``dir`` is where W&B writes its local files (default: W&B's, i.e. ``WANDB_DIR`` or ``.``).
    """

    tracker = "W&B"
    state_key = "wandb"

    def __init__(
        self,
        project: str = "aevyra-reflex",
        run_name: str | None = None,
        entity: str | None = None,
        tags: Sequence[str] | None = None,
        mode: str | None = None,
        log_prompt_each_iter: bool = False,
        *,
        run_id: str | None = None,
        dir: str | None = None,
    ) -> None:
        self.project = project
        self.run_name = run_name
        self.entity = entity
        self.tags = list(tags or [])
        self.mode = mode
        self.log_prompt_each_iter = log_prompt_each_iter
        self.run_id = run_id
        self.dir = dir
        self.run: Any = None  # wandb.Run (its type moved between wandb releases)
        self._off = False
        self._last_step = 0
        self._rows: list[dict[str, Any]] = []
        self._run_dir: Path | None = None
        self._done: set[int] = set()  # steps the W&B run holds (baseline 0, iterations)
        self._running = RunningTotals()  # best_score_*, total_* after each iteration
        self._at_zero: set[str] = set()  # keys the run holds at 0: score_test, score_val
        self._earlier: list[str] = []  # the run's earlier offline directories
        self._saved: dict[str, Any] = {}  # its .trackers.json entry when the run started

    def _has_run(self) -> bool:
        return self.run is not None

    # --- lifecycle hooks (each one guarded) ------------------------------------------------

    def on_baseline(self, snapshot: EvalSnapshot) -> None:
        self._safely("on_baseline", lambda: self._baseline(snapshot))

    def on_iteration(self, record: IterationRecord) -> None:
        self._safely("on_iteration", lambda: self._iteration(record))

    def on_evaluation_end(self, label: EvalLabel, snapshot: EvalSnapshot) -> None:
        # Only the initial prompt's val evaluation is logged; the others make no tracker call,
        # so they do not go through _safely (a success there resets the outage breaker).
        if label == INITIAL_VAL_LABEL:
            self._safely("on_evaluation_end", lambda: self._initial_val(snapshot.mean_score))

    def on_final(self, snapshot: EvalSnapshot) -> None:
        # One step past the last iteration, so the final point never sits inside the curve.
        step = self._last_step + 1
        if step not in self._done:  # a replayed or resumed run may hold it already
            self._safely("on_final", lambda: self._log(baseline_metrics(snapshot), step))

    def on_run_end(self, result: OptimizationResult) -> None:
        self._safely("on_run_end", lambda: self._log_end(result))
        self._safely("on_run_end", lambda: self._finish(0))

    def on_run_error(self, error: BaseException, partial: OptimizationResult | None) -> None:
        if partial is not None:
            self._safely("on_run_error", lambda: self._log_end(partial))
        message = self._scrub(f"{type(error).__name__}: {error}")[:2000]
        self._safely("on_run_error", lambda: self._summary({"error": message}))
        self._safely("on_run_error", lambda: self._finish(1))

    # --- steps -------------------------------------------------------------------------------

    def _start(self, config: RunConfig, initial_prompt: str) -> None:
        self._run_dir = run_path(config)
        saved = tracker_state(self._run_dir, "wandb") if config.resumed else {}
        if saved.get("project") != self.project or saved.get("entity") != self.entity:
            saved = {}  # another project: a new W&B run (e.g. aevyra-reflex sync elsewhere)
        resuming = self.run_id is not None or bool(saved.get("run_id"))
        self.run_id = self.run_id or saved.get("run_id") or secrets.token_hex(4)
        # W&B records the command line (its ``args``): never a credential in it.
        with redacted_argv(*self._urls):
            run = self._init(config, initial_prompt)
        self.run = run
        run.define_metric("iteration")
        run.define_metric("*", step_metric="iteration")
        earlier = [str(d) for d in saved.get("sync_dirs", []) if d != run.settings.sync_dir]
        self._earlier, self._saved = earlier, saved
        if resuming:
            on_record = self._on_record(run, earlier)
            self._done, self._at_zero = set(on_record), on_record.get(0, set())
        self._last_step = max(self._done, default=0)
        self._save(
            project=self.project,
            entity=self.entity,
            mode=run.settings.mode,  # where promote's alias run goes (reflex_wandb.aliases)
            sync_dirs=[*earlier, run.settings.sync_dir],
        )
        run.summary["initial_prompt"] = initial_prompt
        if config.resumed:  # its val:baseline was measured before: no live hook will say it
            self._initial_val(recorded_initial_val(self._run_dir))
        if resuming:
            self._catch_up()

    def _init(self, config: RunConfig, initial_prompt: str) -> Any:
        return wandb.init(
            project=self.project,
            entity=self.entity,
            name=self.run_name or _default_name(config),
            tags=[*self.tags, config.strategy],
            mode=self.mode,  # type: ignore[arg-type]  # wandb checks the value itself
            config=run_params(config, initial_prompt),
            id=self.run_id,
            resume="allow",  # a resumed reflex run continues the same W&B run
            reinit="create_new",  # never finish or reuse a run the caller has open
            dir=self.dir,
        )

    @staticmethod
    def _on_record(run: Any, earlier: list[str]) -> dict[int, set[str]]:
        """Steps (and their keys) the W&B run already holds: on disk in its earlier offline
        files, or (online) up to the ``iteration`` the server's summary has, with the baseline
        test score at 0 and the val one if the summary has ``score_val`` (it comes first)."""
        if run.settings.mode == "offline":
            return logged_keys(earlier)
        last = run.summary.get("iteration")
        steps = range(0, int(last) + 1) if isinstance(last, int | float) else range(0)
        at_zero = {"score_test"} | {"score_val"} & set(run.summary.keys())
        return {step: set(at_zero) if step == 0 else set() for step in steps}

    def _went_offline(self, hook: str) -> None:
        self._save(offline_in=hook, missed=True)

    def _save(self, **values: Any) -> None:
        save_tracker_state(self._run_dir, "wandb", run_id=self.run_id, **values)

    def _catch_up(self) -> None:
        """Log each iteration the run directory recorded but this W&B run does not hold."""
        recorded = recorded_iterations(self._run_dir)
        if recorded:  # the final point goes after the last iteration, not after a final
            self._last_step = max(record.iteration for record in recorded)
        for record in recorded:
            self._rows.append(iteration_row(record))
            self._running.add(record)  # the running series go on from the whole record
            if record.iteration not in self._done:
                self._log_iteration(record)

    def _initial_val(self, score: float | None) -> None:
        """The initial prompt's val score: ``score_val`` at iteration 0 (the val curve's start)
        and the start of the running best val (``best_score_val``)."""
        if score is None:
            return
        self._running.seed_val(score)
        if "score_val" not in self._at_zero:  # a resumed or replayed run may hold it already
            self._log({"score_val": score}, 0)
            self._at_zero.add("score_val")

    def _baseline(self, snapshot: EvalSnapshot) -> None:
        if "score_test" not in self._at_zero:  # a resumed run may hold it already
            self._log(baseline_metrics(snapshot), 0)
            self._done.add(0)
            self._at_zero.add("score_test")

    def _iteration(self, record: IterationRecord) -> None:
        if record.iteration in self._done:
            return  # already on record (a resumed run's catch-up)
        self._rows.append(iteration_row(record))
        self._log_iteration(record)

    def _log_iteration(self, record: IterationRecord) -> None:
        self._last_step = max(self._last_step, record.iteration)
        # history: the running best/totals too; the summary gets the run-end numbers at the end
        values: dict[str, Any] = {**iteration_metrics(record), **self._running.add(record)}
        if self.log_prompt_each_iter:
            rows = [[row[column] for column in _TABLE_COLUMNS] for row in self._rows]
            columns: list[str | int] = list(_TABLE_COLUMNS)
            values["prompts"] = wandb.Table(columns=columns, data=rows)
        self._run().log({"iteration": record.iteration, **values})
        self._done.add(record.iteration)

    def where(self) -> list[str]:
        """Where the run went, and how to upload or open it (the CLI prints these lines)."""
        if self.run is None:
            return []
        run = self.run
        path = "/".join(p for p in (run.entity or self.entity, run.project, run.id) if p)
        if getattr(run.settings, "_offline", False) or run.settings.mode == "offline":
            return [
                f"W&B: offline run {path} in {run.settings.sync_dir}",
                f"  upload: wandb sync {run.settings.sync_dir}",
            ]
        url = getattr(run, "url", None)
        return [f"W&B: run {path}" + (f" at {url}" if url else "")]

    def _log_end(self, result: OptimizationResult) -> None:
        run = self._run()
        run.config.update(split_params(result), allow_val_change=True)
        numbers: dict[str, Any] = dict(summary_metrics(result))
        pct = numbers.get("improvement_pct")
        if pct is not None and math.isnan(pct):
            numbers["improvement_pct"] = None  # null, as in result.json; the note says why
        self._summary(
            {
                **numbers,
                "improvement_pct_note": result.improvement_pct_note,
                "best_prompt": result.best_prompt,
                "stop_reason": self._scrub(result.stop_reason),
                "completed": result.completed,
                "reflex_run_id": result.run_id or "",
            }
        )
        self._log_best_prompt(result)
        self._log_confusion(result)

    def _log_confusion(self, result: OptimizationResult) -> None:
        """A label task's matrices as the summary tables ``confusion_baseline`` and
        ``confusion_final`` (one row per reference label: counts per answered label, support,
        precision, recall); set again, not appended, on a replay."""
        tables: dict[str, Any] = {}
        for side, matrix in confusion_matrices(result).items():
            rows = matrix.rows()
            columns: list[str | int] = list(rows[0])
            data = [[row[str(column)] for column in columns] for row in rows]
            tables[f"confusion_{side}"] = wandb.Table(columns=columns, data=data)
        if tables:
            self._summary(tables)

    def _log_best_prompt(self, result: OptimizationResult) -> None:
        run = self._run()
        if self._holds_best_prompt(run, result.run_id):
            return  # a replay or a second sync: the W&B run has this artifact already
        metadata = {
            "reflex_run_id": result.run_id,
            "final_score_test": result.final.mean_score if result.final else None,
            "baseline_score": result.baseline.mean_score if result.baseline else None,
        }
        run.log_artifact(prompt_artifact(result.best_prompt, metadata))
        self._log_evaluation(result)
        self._save(best_prompt_of=result.run_id)

    def _log_evaluation(self, result: OptimizationResult) -> None:
        """The test rows' answers (``evaluation``: input, expected, baseline and final output
        and scores, ``change``/``changed``; a tool call as its canonical answer text, JSON as
        written), one Table; and each side's rows as the summary tables ``rows_baseline`` and
        ``rows_final`` (:func:`side_rows`: one schema, so W&B compares them across runs)."""
        rows = evaluation_rows(result)
        if not rows:
            return
        clean = redact_data({"rows": rows}, *self._urls)["rows"]
        table = _table(clean)
        self._run().log({"iteration": self._last_step + 1, "evaluation": table})
        sides = {f"rows_{side}": _table(side_rows(clean, side)) for side in ("baseline", "final")}
        self._summary(sides)

    def _holds_best_prompt(self, run: Any, reflex_run_id: str | None) -> bool:
        """Whether the W&B run already has this reflex run's ``best-prompt``: on disk in its
        earlier offline files (what a killed process wrote, not what it meant to), or, online,
        as the run directory recorded when it was logged."""
        if not reflex_run_id:
            return False
        if run.settings.mode == "offline":
            return any(
                name == ARTIFACT and meta.get("reflex_run_id") == reflex_run_id
                for name, meta in logged_artifacts(self._earlier)
            )
        return bool(self._saved.get("best_prompt_of") == reflex_run_id)

    def _finish(self, exit_code: int) -> None:
        self._run().finish(exit_code=exit_code)

    # --- W&B helpers -------------------------------------------------------------------------

    def _run(self) -> Any:
        if self.run is None:
            raise RuntimeError("no W&B run: on_run_start did not complete")
        return self.run

    def _log(self, metrics: Mapping[str, float], step: int) -> None:
        self._run().log({"iteration": step, **metrics})

    def _summary(self, values: Mapping[str, Any]) -> None:
        self._run().summary.update(dict(values))


def side_rows(rows: Sequence[Mapping[str, Any]], side: str) -> list[dict[str, Any]]:
    """One side (``baseline`` or ``final``) of the evaluation rows, its columns without the
    side's prefix: ``example_id``, ``model``, ``input``, ``expected``, ``output``, ``score``,
    a score per metric, ``change``, ``changed`` (the same on both sides)."""
    prefix = f"{side}_"
    shared = ("example_id", "model", "input", "expected")
    kept = []
    for row in rows:
        out = {key: row.get(key) for key in shared}
        out.update({k[len(prefix) :]: v for k, v in row.items() if k.startswith(prefix)})
        out.update(change=row.get("change"), changed=row.get("changed"))
        kept.append(out)
    return kept


def _table(rows: Sequence[Mapping[str, Any]]) -> Any:
    columns: list[str | int] = list(rows[0])
    data = [[row.get(str(column)) for column in columns] for row in rows]
    return wandb.Table(columns=columns, data=data, allow_mixed_types=True)


def _default_name(config: RunConfig) -> str:
    """``<strategy>-<dataset>-<reflex run id>``, the same name the MLflow run gets."""
    parts = [config.strategy, config.dataset_name or "", config.run_id or ""]
    return "-".join(part for part in parts if part)
