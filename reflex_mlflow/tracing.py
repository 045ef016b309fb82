"""Opt-in LiteLLM tracing into the reflex MLflow run (``MLflowCallback(trace_llm_calls=True)``).

MLflow links a trace to the run that is active *in the thread that makes the call*. Every model
call of a reflex run happens on the engine's event-loop thread, so the run is activated there,
and LiteLLM's MLflow integration (``mlflow.litellm.autolog``) records one trace per call.
"""

from __future__ import annotations

import mlflow

from reflex.models.runner import LoopRunner

__all__ = ["LlmTracing"]


class LlmTracing:
    """Turns LiteLLM tracing on for one MLflow run, and off again at the end."""

    def __init__(self, tracking_uri: str, run_id: str) -> None:
        self.tracking_uri = tracking_uri
        self.run_id = run_id

    def start(self) -> None:
        import mlflow.litellm

        mlflow.set_tracking_uri(self.tracking_uri)  # traces use the fluent API's store
        mlflow.litellm.autolog()
        LoopRunner.shared().run(_activate(self.run_id))

    def stop(self, status: str) -> None:
        import mlflow.litellm

        mlflow.flush_trace_async_logging()
        LoopRunner.shared().run(_deactivate(status))
        mlflow.litellm.autolog(disable=True)


async def _activate(run_id: str) -> None:
    mlflow.start_run(run_id=run_id)


async def _deactivate(status: str) -> None:
    if mlflow.active_run() is not None:
        mlflow.end_run(status=status)
