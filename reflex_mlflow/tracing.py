"""Opt-in LiteLLM tracing into the reflex MLflow run (``MLflowCallback(trace_llm_calls=True)``).

MLflow links a trace to the run that is active *in the thread that makes the call*. Every model
call of a reflex run happens on the engine's event-loop thread, so the run is activated there,
and LiteLLM's MLflow integration (``mlflow.litellm.autolog``) records one trace per call.
LiteLLM puts each call's ``api_base`` on its span, credentials included, so a span processor
redacts every span's attributes before it is exported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import mlflow
from mlflow.entities import LiveSpan
from mlflow.tracing.config import get_config

from reflex.api.tracking import on_model_thread, redact_data

__all__ = ["LlmTracing"]


class LlmTracing:
    """Turns LiteLLM tracing on for one MLflow run, and off again at the end.

    ``urls`` are the run's URLs whose credentials no span may carry.
    """

    def __init__(self, tracking_uri: str, run_id: str, urls: Sequence[str | None] = ()) -> None:
        self.tracking_uri = tracking_uri
        self.run_id = run_id
        self.urls = tuple(urls)
        self._previous: list[Callable[[LiveSpan], None]] | None = None

    def start(self) -> None:
        import mlflow.litellm

        # The caller's span processors, read first: a new tracking URI resets MLflow's tracing
        # config (MLflow 3.17), so read after it they would be lost for the run and after.
        self._previous = list(get_config().span_processors)
        mlflow.set_tracking_uri(self.tracking_uri)  # traces use the fluent API's store
        # A plain one-argument function: MLflow refuses a bound method (it counts ``self``).
        mlflow.tracing.configure(span_processors=[*self._previous, _redactor(self.urls)])
        mlflow.litellm.autolog()
        on_model_thread(_activate(self.run_id))

    def stop(self, status: str) -> None:
        import mlflow.litellm

        mlflow.flush_trace_async_logging()
        on_model_thread(_deactivate(status))
        mlflow.litellm.autolog(disable=True)
        if self._previous is not None:  # the caller's own span processors, as they were
            mlflow.tracing.configure(span_processors=self._previous)
            self._previous = None


def _redactor(urls: tuple[str | None, ...]) -> Callable[[LiveSpan], None]:
    """The span processor: every attribute of an ending span through the one redactor."""

    def redact(span: LiveSpan) -> None:
        attributes = span.attributes
        clean = redact_data(attributes, *urls)
        span.set_attributes({k: v for k, v in clean.items() if v != attributes.get(k)})
        _redact_events(span, urls)

    return redact


def _redact_events(span: LiveSpan, urls: tuple[str | None, ...]) -> None:
    """The attributes of the span's events too: an ``exception`` event holds the provider's
    error message, which echoes the request URL. MLflow has no setter for recorded events, so
    the OpenTelemetry span's own are rewritten (left alone if that layout ever changes)."""
    for event in getattr(getattr(span, "_span", None), "_events", None) or ():
        attributes = getattr(event, "_attributes", None)
        if not attributes:
            continue
        clean = redact_data(dict(attributes), *urls)
        if clean != dict(attributes):
            event._attributes = clean


async def _activate(run_id: str) -> None:
    mlflow.start_run(run_id=run_id)


async def _deactivate(status: str) -> None:
    if mlflow.active_run() is not None:
        mlflow.end_run(status=status)
