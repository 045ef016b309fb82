"""``MLflowRun``: the guarded MLflow run every hook of the MLflow callback writes to.

Its client and run id, the request limits of each guarded call (:mod:`reflex_mlflow.connection`),
what the breaker records when it opens, and the batched writes of metrics, params and tags (a
continued run skips what it has). :class:`~reflex_mlflow.callback.MLflowCallback` builds on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag

from reflex.api.tracking import GuardedCallback, ParamValue, save_tracker_state
from reflex_mlflow.connection import bounded_requests, shown, where_lines
from reflex_mlflow.history import unlogged

__all__ = ["PARAM_LIMIT", "MLflowRun"]

PARAM_LIMIT = 6000  # MLflow rejects longer param values
_BATCH = 100  # MLflow's per-request limit for params


class MLflowRun(GuardedCallback):
    """The MLflow run of a tracker callback, and its guarded writes."""

    tracker = "MLflow"
    state_key = "mlflow"

    client: MlflowClient | None = None
    run_id: str | None = None
    tracking_uri: str | None = None
    resolved_uri: str | None = None
    experiment_name: str = "aevyra-reflex"
    experiment_id: str | None = None
    _resume: bool = False
    _run_dir: Path | None = None

    def _request_limits(self) -> AbstractContextManager[object]:
        if not self._is_http():
            return nullcontext()  # a local store makes no HTTP requests
        return bounded_requests()

    def _attempt(self, hook: str, action: Callable[[], None]) -> bool:
        """One guarded action; whether it landed (a failure counts toward the breaker)."""
        failed = len(self._failed)
        self._safely(hook, action)
        return not self._off and len(self._failed) == failed

    def _went_offline(self, hook: str) -> None:
        save_tracker_state(self._run_dir, "mlflow", offline_in=hook, missed=True)

    def where(self) -> list[str]:
        """Where the run went, and the command that opens it (the CLI prints these lines)."""
        if not self._has_run():
            return []
        uri = shown(self.resolved_uri or "")
        return where_lines(uri, self.experiment_name, str(self.experiment_id), str(self.run_id))

    def _has_run(self) -> bool:
        return self.client is not None and self.run_id is not None

    def _tracker_urls(self) -> tuple[str | None, ...]:
        return (self.tracking_uri,)

    def _is_http(self) -> bool:
        uri = self.resolved_uri or self.tracking_uri or ""
        return uri.startswith(("http://", "https://"))

    def _run(self) -> tuple[MlflowClient, str]:
        if self.client is None or self.run_id is None:
            raise RuntimeError("no MLflow run: on_run_start did not complete")
        return self.client, self.run_id

    def _log_new_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """``_log_metrics``, but a continued run skips a value it already has at ``step`` (a
        replay or a resume of a run whose final and summary were logged); a new value is logged
        (e.g. after a failed run's partial numbers) and becomes the latest."""
        if self._resume:
            metrics = unlogged(*self._run(), metrics, step)
        if metrics:
            self._log_metrics(metrics, step)

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
            Param(key, str(value)[:PARAM_LIMIT])
            for key, value in params.items()
            if key not in existing
        ]
        for start in range(0, len(entities), _BATCH):
            client.log_batch(run_id, params=entities[start : start + _BATCH])

    def _set_tags(self, tags: Mapping[str, str]) -> None:
        client, run_id = self._run()
        client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()])
