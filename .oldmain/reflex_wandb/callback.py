"""``WandbCallback``: one reflex run becomes one W&B run (config, curves, summary, artifact).

Metrics are logged against an explicit ``iteration`` axis (``define_metric``): the baseline test
score at iteration 0, each iteration's train/val scores at its number, and the final test score
one step past the last iteration. Every W&B call is guarded: a failure is a warning and the
optimization goes on. See docs/trackers.md for what is logged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import wandb

from reflex.api import (
    GuardedCallback,
    baseline_metrics,
    iteration_metrics,
    iteration_row,
    run_params,
    split_params,
    summary_metrics,
)

if TYPE_CHECKING:
    from reflex.api import EvalSnapshot, IterationRecord, OptimizationResult, RunConfig

__all__ = ["WandbCallback"]

_TABLE_COLUMNS = ["iteration", "score", "val_score", "prompt", "reasoning"]


class WandbCallback(GuardedCallback):
    """Log a reflex run to Weights & Biases.

    ``mode`` is W&B's: ``"online"``, ``"offline"`` (writes locally with no network or API key;
    upload later with ``wandb sync``) or ``"disabled"``; ``None`` lets W&B decide
    (``WANDB_MODE``, else online). ``run_id`` continues an existing W&B run (``resume="allow"``).
    ``dir`` is where W&B writes its local files (default: W&B's, i.e. ``WANDB_DIR`` or ``.``).
    """

    tracker = "W&B"

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

    def _has_run(self) -> bool:
        return self.run is not None

    # --- lifecycle hooks (each one guarded) ------------------------------------------------

    def on_baseline(self, snapshot: EvalSnapshot) -> None:
        self._safely("on_baseline", lambda: self._log(baseline_metrics(snapshot), 0))

    def on_iteration(self, record: IterationRecord) -> None:
        self._safely("on_iteration", lambda: self._iteration(record))

    def on_final(self, snapshot: EvalSnapshot) -> None:
        # One step past the last iteration, so the final point never sits inside the curve.
        step = self._last_step + 1
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
        run: Any = wandb.init(
            project=self.project,
            entity=self.entity,
            name=self.run_name,
            tags=[*self.tags, config.strategy],
            mode=self.mode,  # type: ignore[arg-type]  # wandb checks the value itself
            config=run_params(config),
            id=self.run_id,
            resume="allow" if self.run_id else None,
            reinit="create_new",  # never finish or reuse a run the caller has open
            dir=self.dir,
        )
        self.run = run
        run.define_metric("iteration")
        run.define_metric("*", step_metric="iteration")
        if self.run_id is not None:
            self._last_step = int(run.summary.get("iteration", 0) or 0)
        run.summary["initial_prompt"] = initial_prompt

    def _iteration(self, record: IterationRecord) -> None:
        self._last_step = max(self._last_step, record.iteration)
        self._log(iteration_metrics(record), record.iteration)
        self._rows.append(iteration_row(record))

    def _log_end(self, result: OptimizationResult) -> None:
        run = self._run()
        run.config.update(split_params(result), allow_val_change=True)
        self._summary(
            {
                **summary_metrics(result),
                "best_prompt": result.best_prompt,
                "stop_reason": self._scrub(result.stop_reason),
                "completed": result.completed,
                "reflex_run_id": result.run_id or "",
            }
        )
        if self.log_prompt_each_iter and self._rows:
            rows = [[row[column] for column in _TABLE_COLUMNS] for row in self._rows]
            columns: list[str | int] = list(_TABLE_COLUMNS)
            table = wandb.Table(columns=columns, data=rows)
            run.log({"prompts": table})
        self._log_best_prompt(result)

    def _log_best_prompt(self, result: OptimizationResult) -> None:
        run = self._run()
        metadata = {
            "reflex_run_id": result.run_id,
            "final_score_test": result.final.mean_score if result.final else None,
            "baseline_score": result.baseline.mean_score if result.baseline else None,
        }
        artifact = wandb.Artifact("best-prompt", type="prompt", metadata=metadata)
        with artifact.new_file("best_prompt.txt", encoding="utf-8") as handle:
            handle.write(result.best_prompt)
        run.log_artifact(artifact)

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
