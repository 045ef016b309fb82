"""The scoring contracts: ``Score`` (a metric's verdict on one output), the ``Metric`` and
``ModelGradedMetric`` protocols (their docstrings are the spec) and ``JudgeCall``; and how a
metric with options is rebuilt from a run's record (``ConfigurableMetric``, ``MetricSpec``,
``metric_specs``: ``check`` and ``export`` rebuild metrics from config.json).

A base module beside :mod:`reflex.types` (which re-exports the four contracts) and
:mod:`reflex.config` (which re-exports the metric specs); plugins import them from
:mod:`reflex.api`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from reflex.result import Example  # a record; the contracts here take it

if TYPE_CHECKING:
    from reflex.models.spec import ModelSpec

__all__ = [
    "ConfigurableMetric",
    "JudgeCall",
    "Metric",
    "MetricSpec",
    "ModelGradedMetric",
    "Score",
    "metric_specs",
]

# Sends one conversation to the judge model and returns its reply text (see ModelGradedMetric).
JudgeCall = Callable[[Sequence[Mapping[str, str]]], Awaitable[str]]


@dataclass(frozen=True)
class Score:
    """A metric's verdict on one output.

    ``value`` is in [0, 1], higher is better. ``feedback`` is optional text for reflective
    strategies. ``objectives`` holds optional named sub-scores, each in [0, 1]. ``error`` is set
    when the output could not be scored (the row then counts as errored, not as a real 0).
    ``judge_usage``: the judge calls the metric made itself, outside the run's client (an MLflow
    judge through MLflow's adapters): ``calls``, ``prompt_tokens``, ``completion_tokens`` and
    ``cost`` (absent: unknown); the evaluator adds them to the run's ledger under "judge".
    """

    value: float
    feedback: str | None = None
    objectives: Mapping[str, float] = field(default_factory=dict)
    error: str | None = None
    judge_usage: Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.value <= 1.0:
            raise ValueError(f"Score.value must be in [0, 1], got {self.value!r}")


@runtime_checkable
class Metric(Protocol):
    """Scores one model output against one example.

    - ``name``: unique, lower_snake_case; used on the CLI (``--metric NAME``) and as the key in
      ``scores_by_metric``.
    - ``requires_reference``: when True, rows whose ``ideal`` is None are skipped (and counted),
      never scored 0.
    - ``score(output, example)`` returns a :class:`Score` with ``value`` in [0, 1], higher is
      better. It must not mutate ``example``. A per-example failure is returned as a Score with
      ``error`` set, never raised; raise only for a bug in the metric itself.
    - ``scores_trace`` (optional class attribute, default False): in pipeline mode
      (:mod:`reflex.data.pipeline`) a metric with ``scores_trace = True`` (or named with
      ``--score-trace``) receives as ``output`` the whole trace as JSON text,
      ``{"output": final output, "steps": [{"name", "input", "output"}, ...]}``, instead of
      the final output alone. Outside pipeline mode there is no trace: it gets the output.
      A pipeline that failed on an example is scored 0 on every metric, without calling it.
    """

    name: str
    requires_reference: bool

    def score(self, output: str, example: Example) -> Score: ...


@runtime_checkable
class ModelGradedMetric(Protocol):
    """A Metric whose verdict comes from a judge model (e.g. ``LLMJudge``).

    Everything in :class:`Metric` holds, plus:

    - ``judge``: the judge model and decoding parameters (part of the cache key).
    - ``ascore(output, example, call)``: the evaluator's path. The metric sends its judge
      conversations through ``call`` and nothing else, so they are cached, counted under the
      "judge" role and share the run's concurrency limit. A reply it cannot use is retried and,
      if still unusable, returned as a Score with ``error`` set (a failed judgement: excluded and
      counted), never as a made-up midpoint. Provider errors propagate.
    - ``score(output, example)`` may score standalone (its own client) outside a running loop.

    A run scored by any such metric is flagged ``model_graded`` in its snapshots and result.
    """

    name: str
    requires_reference: bool
    judge: ModelSpec

    def score(self, output: str, example: Example) -> Score: ...

    async def ascore(self, output: str, example: Example, call: JudgeCall) -> Score: ...


class MetricSpec(BaseModel):
    """How to rebuild one metric that takes options: ``registry.metric(name, **options)``.

    ``name`` is the metric's *registered* name (e.g. ``llm_judge``); ``options`` are JSON values.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    options: dict[str, Any] = Field(default_factory=dict)


@runtime_checkable
class ConfigurableMetric(Protocol):
    """A metric with options opts in to being rebuilt from config.json (``check``, ``export``).

    ``to_config()`` returns ``{"name": <registered name>, "options": {...}}`` such that
    ``get_registry().metric(name, **options)`` builds an equal metric. Options must be JSON
    values and must never hold secrets (API keys, credentials in URLs: see reflex.redact).
    """

    def to_config(self) -> dict[str, Any]: ...


def metric_specs(metrics: Iterable[object]) -> list[MetricSpec]:
    """The specs of the metrics that opt in (:class:`ConfigurableMetric`), in order."""
    return [
        MetricSpec.model_validate(m.to_config())
        for m in metrics
        if isinstance(m, ConfigurableMetric)
    ]
