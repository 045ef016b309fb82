"""``ReflexPromptOptimizer``: reflex's engine as an optimizer of ``mlflow.genai.optimize_prompts``.

::

    from aevyra_reflex import PromptOptimizer
    from reflex_mlflow import ReflexPromptOptimizer

    result = mlflow.genai.optimize_prompts(
        predict_fn=predict_fn,
        train_data=dataset,
        prompt_uris=[prompt.uri],
        optimizer=ReflexPromptOptimizer(
            PromptOptimizer().set_reasoning_model("openai/gpt-4o").set_budget(max_reasoning_calls=20)
        ),
        scorers=[Correctness()],
    )

The builder carries everything a reflex run takes (strategy, seed, splits, budgets, run
directory, cache, extra metrics); the optimizer adds MLflow's side: ``train_data`` split into
train / val / a locked test split (seeded), MLflow's ``predict_fn`` as the task and its
scorers as the metric (:mod:`reflex_mlflow.bridge`), the prompt as a chat template whose
``{{variables}}`` every candidate keeps. MLflow's initial and final scores are the baseline's
and the winner's on the test split, which selection never saw; :attr:`last_result` holds the
whole reflex result (p-value, iterations, run id and directory).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from statistics import fmean
from typing import TYPE_CHECKING, Any, Protocol

import mlflow
from mlflow.genai.optimize.optimizers import BasePromptOptimizer
from mlflow.genai.optimize.types import PromptOptimizerOutput

from reflex.api import Callback, ConfigurationError, OptimizationResult, RunConfig
from reflex_mlflow.bridge import (
    PREDICT_MODEL,
    SCORE_STEP,
    Bridge,
    MlflowScorers,
    PromptForm,
    Serial,
    records,
    reflex_rows,
)

if TYPE_CHECKING:
    from reflex.api import EvalSnapshot

__all__ = ["Builder", "ReflexPromptOptimizer"]

logger = logging.getLogger(__name__)


class Builder(Protocol):
    """What the optimizer uses of ``aevyra_reflex.PromptOptimizer`` (the builder users know)."""

    def clone(self) -> Builder: ...

    def set_dataset(self, data: Any, *, name: str | None = None) -> Builder: ...

    def set_pipeline(self, pipeline: Callable[..., Any]) -> Builder: ...

    def add_provider(self, provider: str, model: str | None = None) -> Builder: ...

    def add_metric(self, metric: Any, *, weight: float = 1.0) -> Builder: ...

    def build_config(self) -> RunConfig: ...

    def run(self, prompt: Any, callbacks: Sequence[Any] = ()) -> OptimizationResult: ...


class ReflexPromptOptimizer(BasePromptOptimizer):
    """Optimize an MLflow prompt with reflex: ``optimizer=ReflexPromptOptimizer(builder)``.

    ``builder``: a configured ``aevyra_reflex.PromptOptimizer`` (reasoning model, strategy,
    seed, splits, budgets, run directory...), without dataset or task model: MLflow gives
    those. ``callbacks``: more reflex callbacks. ``log_to_mlflow``: with MLflow's tracking on,
    the reflex run logs into the MLflow run ``optimize_prompts`` opened (``MLflowCallback``).
    """

    def __init__(
        self,
        builder: Builder,
        *,
        callbacks: Sequence[Callback] = (),
        log_to_mlflow: bool = True,
    ) -> None:
        self.builder = builder
        self.callbacks = list(callbacks)
        self.log_to_mlflow = log_to_mlflow
        self.last_result: OptimizationResult | None = None

    def optimize(
        self,
        eval_fn: Callable[..., Any],
        train_data: list[dict[str, Any]],
        target_prompts: dict[str, str],
        enable_tracking: bool = True,
    ) -> PromptOptimizerOutput:
        if eval_fn is None or not train_data:
            raise ConfigurationError(
                "ReflexPromptOptimizer needs train_data (and scorers): reflex splits it into "
                "train, val and a held-out test split"
            )
        if len(target_prompts) != 1:
            raise ConfigurationError(
                f"ReflexPromptOptimizer optimizes one prompt per run, got {len(target_prompts)} "
                f"({', '.join(target_prompts)}); call optimize_prompts once per prompt"
            )
        name, template = next(iter(target_prompts.items()))
        form = PromptForm.parse(name, template)
        rows = records(train_data, form.variables)
        serial = Serial(eval_fn)
        builder = (
            self.builder.clone()
            .set_dataset(reflex_rows(rows), name=f"mlflow-{name}")
            .set_pipeline(Bridge(form, rows, serial))
            .add_provider(PREDICT_MODEL)
            .add_metric(MlflowScorers())
        )
        _check_models(builder.build_config())
        callbacks = [*self.callbacks, *self._tracker(enable_tracking)]
        result = builder.run(form.spec, callbacks=callbacks)
        self.last_result = result
        logger.info("reflex run %s: %d eval_fn call(s)", result.run_id, serial.calls)
        return PromptOptimizerOutput(
            optimized_prompts={name: form.mlflow_template(result.best_prompt)},
            initial_eval_score=_mean(result.baseline),
            final_eval_score=_mean(result.final),
            initial_eval_score_per_scorer=_per_scorer(result.baseline),
            final_eval_score_per_scorer=_per_scorer(result.final),
        )

    def _tracker(self, enable_tracking: bool) -> list[Callback]:
        """The MLflowCallback logging into the MLflow run optimize_prompts opened, if any."""
        run = mlflow.active_run() if enable_tracking and self.log_to_mlflow else None
        if run is None:
            return []
        from reflex_mlflow.callback import MLflowCallback

        return [MLflowCallback(tracking_uri=mlflow.get_tracking_uri(), run_id=run.info.run_id)]


def _check_models(config: RunConfig) -> None:
    others = [m for m in config.models if m != PREDICT_MODEL]
    if others:
        raise ConfigurationError(
            f"the builder names task model(s) {', '.join(others)}: under optimize_prompts the "
            "task is MLflow's predict_fn; build it without add_provider"
        )


def _mean(snapshot: EvalSnapshot | None) -> float | None:
    return None if snapshot is None else snapshot.scores_by_metric.get(SCORE_STEP)


def _per_scorer(snapshot: EvalSnapshot | None) -> dict[str, float]:
    """Each scorer's mean over the snapshot's rows (the metric's objectives)."""
    if snapshot is None:
        return {}
    prefix = f"{SCORE_STEP}."
    values: dict[str, list[float]] = {}
    for sample in snapshot.samples:
        for key, value in sample.objectives.items():
            if key.startswith(prefix):
                values.setdefault(key.removeprefix(prefix), []).append(value)
    return {name: fmean(found) for name, found in values.items()}
