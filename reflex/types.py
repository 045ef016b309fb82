"""Contracts shared by the engine and plugins: examples, scores, metrics, strategies, context.

The Metric, Strategy and StrategyContext protocols are the plugin contracts; their docstrings
are the spec. Plugins import them from :mod:`reflex.api`.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from reflex.result import Example  # a record; the contracts here take it

if TYPE_CHECKING:  # pydantic is imported where option models are built, not to read data
    from pydantic import BaseModel

    from reflex.data.dataset import Dataset
    from reflex.data.prompts import PromptSpec
    from reflex.models.spec import ModelSpec
    from reflex.result import EvalSnapshot, IterationRecord, PairOutcome, StopReason

__all__ = [
    "BaseStrategy",
    "BudgetView",
    "Example",
    "JudgeCall",
    "Message",
    "Metric",
    "ModelGradedMetric",
    "OptionsT",
    "RunSettings",
    "Score",
    "Strategy",
    "StrategyContext",
]

Message = dict[str, str]
# Sends one conversation to the judge model and returns its reply text (see ModelGradedMetric).
JudgeCall = Callable[[Sequence[Mapping[str, str]]], Awaitable[str]]


@dataclass(frozen=True)
class Score:
    """A metric's verdict on one output.

    ``value`` is in [0, 1], higher is better. ``feedback`` is optional text for reflective
    strategies. ``objectives`` holds optional named sub-scores, each in [0, 1]. ``error`` is set
    when the output could not be scored (the row then counts as errored, not as a real 0).
    """

    value: float
    feedback: str | None = None
    objectives: Mapping[str, float] = field(default_factory=dict)
    error: str | None = None

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


@dataclass(frozen=True)
class RunSettings:
    """The run settings a strategy may read (``ctx.settings``); a frozen copy of the config.

    ``models``: the task models; ``reasoning_model``: None when the run has none (strategies with
    ``requires_reasoning_model`` never see None); ``source_model``: the family the prompt was
    written for (reasoning prompts then add migration advice); ``reasoning_templates``: the
    user's template overrides (pass them to :func:`reflex.api.render`); ``max_iterations``,
    ``batch_size`` (minibatch rows), ``seed``: as configured.
    """

    models: tuple[str, ...]
    reasoning_model: str | None
    source_model: str | None
    reasoning_templates: Mapping[str, str]
    max_iterations: int
    batch_size: int
    seed: int


@dataclass(frozen=True)
class BudgetView:
    """What is left of the run's budget, as of the moment ``ctx.budget`` was read.

    ``remaining_calls``: task-model calls the strategy may still pay for (the room reserved for
    the final test measurement already taken off); None when ``--max-calls`` is not set.
    ``calls_per_row``: task-model calls one (example, model) evaluation makes: 1.0 for a plain
    run, a pipeline's average so far. ``reasoning_calls`` / ``reasoning_tokens``: spent on the
    reasoning model so far. ``elapsed_s``: wall-clock seconds the run has taken.
    """

    remaining_calls: int | None
    calls_per_row: float
    reasoning_calls: int
    reasoning_tokens: int
    elapsed_s: float


OptionsT = TypeVar("OptionsT", bound="BaseModel")


class StrategyContext(Protocol):
    """What a strategy sees: the engine's side of the Strategy contract.

    The data (read-only): ``train``, ``val`` (selection happens on val, never on test, which a
    strategy cannot reach), ``initial_prompt`` and ``prompt_spec`` (the prompt as named
    components). ``settings`` (:class:`RunSettings`) and ``budget`` (:class:`BudgetView`) are
    read-only snapshots. ``rng`` is seeded from the run's seed: use it for every random choice so
    a rerun (and a resume) makes the same choices. ``state`` is the strategy's resumable state
    (JSON-serialisable values only; saved in every checkpoint).

    Progress (read-only): ``iteration`` (iterations recorded so far), ``phase`` (the current
    phase's name), ``best_prompt`` / ``best_val`` (best on val so far), ``should_stop`` (check it
    before each iteration), ``stop`` (a :class:`StopReason`, None while the run goes on;
    ``stop.per_phase`` is True for early stopping, which a new phase clears) and ``stop_reason``
    (the same in words, "" while the run goes on).

    Actions: ``evaluate`` scores a prompt on train rows (cached, counted, within the budget);
    ``reason`` asks the reasoning model; ``record_iteration`` measures a candidate on val,
    keeps the best, applies early stopping and notifies callbacks; ``log`` appends an event.
    ``BudgetExhausted`` raised by any of them must propagate: the engine ends the run with an
    honest final measurement.
    """

    @property
    def train(self) -> Dataset: ...
    @property
    def val(self) -> Dataset: ...
    @property
    def initial_prompt(self) -> str: ...
    @property
    def prompt_spec(self) -> PromptSpec: ...
    @property
    def settings(self) -> RunSettings: ...
    @property
    def budget(self) -> BudgetView: ...
    @property
    def rng(self) -> random.Random: ...
    @property
    def state(self) -> dict[str, Any]: ...
    @property
    def iteration(self) -> int: ...
    @property
    def phase(self) -> str: ...
    @property
    def best_prompt(self) -> str: ...
    @property
    def best_val(self) -> float | None: ...
    @property
    def should_stop(self) -> bool: ...
    @property
    def stop_reason(self) -> str: ...
    @property
    def stop(self) -> StopReason | None: ...

    def evaluate(
        self, prompt: str, examples: Sequence[Example] | None = None, label: str = "train"
    ) -> EvalSnapshot:
        """Score ``prompt`` on ``examples`` (default: the whole train split)."""
        ...

    def reason(self, messages: Sequence[Mapping[str, str]] | str) -> str:
        """Ask the reasoning model; a plain string is sent as one user message."""
        ...

    def record_iteration(
        self,
        prompt: str,
        train: EvalSnapshot | None,
        *,
        reasoning: str = "",
        accepted: bool | None = None,
        change: float | None = None,
        failed: str | None = None,
        rejected: str | None = None,
        components: Mapping[str, str] | None = None,
    ) -> IterationRecord:
        """Record one iteration: measured on val unless ``failed`` or ``rejected`` before val.

        ``train``: the candidate's train (or minibatch) snapshot, if the strategy measured one.
        ``accepted=None`` means "accepted if it became the new best on val". ``components``: the
        candidate as named components (``prompt`` must be their rendering).
        """
        ...

    def log(self, kind: str, **data: Any) -> None:
        """Append a strategy event (``kind`` plus JSON-serialisable fields) to events.jsonl."""
        ...

    def fail_proposal(self, purpose: str, error: str, **data: Any) -> None:
        """Record a reasoning answer that stayed unusable (``result.failed_proposals``)."""
        ...

    def begin_phase(
        self, name: str, *, reset_patience: bool = True, max_iterations: int | None = None
    ) -> None:
        """Start a named phase (a composite strategy running another); see ``phase_history``.

        ``max_iterations`` caps the phase: ``should_stop`` turns True after that many more
        iterations without setting ``stop_reason``, so the caller may start another phase.
        """
        ...

    def end_phase(self, **facts: Any) -> None:
        """Add ``facts`` (JSON-serialisable) to the current phase's ``phase_history`` entry."""
        ...

    def leakage_screen(self, prompt: str) -> str | None:
        """The rejection reason when ``prompt`` copies held-out text under strict leakage."""
        ...

    @property
    def judge(self) -> ModelGradedMetric | None:
        """The run's first model-graded metric, or None."""
        ...

    @property
    def label_free(self) -> bool:
        """True when no train row has a reference answer."""
        ...

    def judge_pairs(self, rows: Sequence[tuple[Example, str, str]]) -> list[PairOutcome]:
        """Ask the run's judge which output is better, per ``(example, first, second)``."""
        ...

    def strategies(self) -> Mapping[str, type[Strategy[Any]]]:
        """Every registered strategy class by name (for composite strategies such as auto)."""
        ...

    def build_strategy(self, name: str, options: Mapping[str, object]) -> Strategy[Any]:
        """A registered strategy with validated ``options`` (one-line ConfigurationError)."""
        ...


@runtime_checkable
class Strategy(Protocol[OptionsT]):
    """Improves a prompt by asking the engine's context to evaluate and reason.

    - ``name``: unique; used with ``-s/--strategy``.
    - ``Options``: a pydantic model with ``extra="forbid"``; the engine builds it from user input
      and passes it to ``__init__`` (``OptionsT`` is that model, so ``self.options`` is typed).
    - ``requires_reasoning_model``: when True the engine refuses to start without one.
    - ``derives_from_data`` (default False): True when candidates come from the data (label
      sets, formats, demos) rather than from the seed's outputs; such a strategy may start from
      a prompt that scores 0 on every preflight row (other strategies refuse it).
    - ``auto_eligible`` (default False): ``auto`` may run it as one of its phases (with a
      reasoning model when ``requires_reasoning_model``).
    - ``optimize(ctx)``: never calls a model directly; uses ``ctx.evaluate``, ``ctx.reason``,
      ``ctx.record_iteration`` and stops when ``ctx.should_stop`` is True. It may keep
      resumable state in ``ctx.state``. Budget exhaustion is signalled by ``BudgetExhausted``
      raised from the context; strategies let it propagate.

    Subclass :class:`BaseStrategy` to get the defaults and a typed ``self.options``; a class
    that does not subclass it must declare every member (the registry checks at load time).
    """

    name: ClassVar[str]
    Options: ClassVar[type[BaseModel]]
    requires_reasoning_model: ClassVar[bool]
    derives_from_data: ClassVar[bool]
    auto_eligible: ClassVar[bool]
    options: OptionsT

    def __init__(self, options: OptionsT) -> None: ...

    def optimize(self, ctx: StrategyContext) -> None: ...


class BaseStrategy(Generic[OptionsT]):
    """A base for strategies: typed ``self.options`` and the optional members' defaults.

    ``class Mine(BaseStrategy[MineOptions])`` with ``Options = MineOptions``; the constructor
    refuses options of another type (a TypeError, also under ``python -O``).
    """

    name: ClassVar[str]
    Options: ClassVar[type[BaseModel]]
    requires_reasoning_model: ClassVar[bool] = False
    derives_from_data: ClassVar[bool] = False
    auto_eligible: ClassVar[bool] = False

    def __init__(self, options: OptionsT) -> None:
        if not isinstance(options, self.Options):
            raise TypeError(
                f"strategy {self.name!r} takes {self.Options.__name__} options, "
                f"not {type(options).__name__}"
            )
        self.options: OptionsT = options

    def optimize(self, ctx: StrategyContext) -> None:
        raise NotImplementedError(f"strategy {self.name!r} does not implement optimize(ctx)")
