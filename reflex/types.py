"""Contracts shared by the engine and plugins: strategies, their context and its capabilities.

The Strategy and StrategyContext protocols are the plugin contracts; their docstrings are the
spec. The scoring contracts (``Score``, ``Metric``, ``ModelGradedMetric``, ``JudgeCall``) live
in :mod:`reflex.scoring` and are re-exported here. Plugins import them from :mod:`reflex.api`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from reflex.result import Example  # a record; the contracts here take it
from reflex.scoring import JudgeCall, Metric, ModelGradedMetric, Score

if TYPE_CHECKING:  # pydantic is imported where option models are built, not to read data
    from pydantic import BaseModel

    from reflex.data.dataset import Dataset
    from reflex.data.prompts import PromptSpec
    from reflex.outcomes import Outcome, PairOutcome, StopReason
    from reflex.result import EvalSnapshot, IterationRecord

__all__ = [
    "COMPONENTS",
    "JUDGING",
    "PHASES",
    "REASONING",
    "SCREENING",
    "STRATEGIES",
    "BaseStrategy",
    "BudgetView",
    "Capability",
    "Components",
    "Example",
    "JudgeCall",
    "Judging",
    "Message",
    "Metric",
    "ModelGradedMetric",
    "OptionsT",
    "Phases",
    "Reasoning",
    "RunSettings",
    "Score",
    "Screening",
    "Strategies",
    "Strategy",
    "StrategyContext",
]

Message = dict[str, str]


@dataclass(frozen=True)
class RunSettings:
    """The run settings a strategy may read (``ctx.settings``); a frozen copy of the config.

    ``models``: the task models; ``reasoning_model``: None when the run has none (strategies with
    ``requires_reasoning_model`` never see None); ``source_model``: the family the prompt was
    written for (reasoning prompts then add migration advice); ``reasoning_templates``: the
    user's template overrides (pass them to :func:`reflex.api.render`); ``max_iterations``,
    ``batch_size`` (minibatch rows), ``seed``: as configured. ``rewrite_messages``: the chat
    template's messages (component names) strategies may rewrite; None: all.
    ``format_names``: the JSON-schema property names the initial prompt names, which every
    candidate must keep naming (its output-format instructions).
    ``feedback_field``: the dataset column (``Example.metadata``) reflective strategies show
    per train row as its feedback; None: none. ``race``: race a round's candidates on growing
    val minibatches (``--race``; ``reflex_strategies._race``) instead of a full val pass each.
    """

    models: tuple[str, ...]
    reasoning_model: str | None
    source_model: str | None
    reasoning_templates: Mapping[str, str]
    max_iterations: int
    batch_size: int
    seed: int
    rewrite_messages: tuple[str, ...] | None = None
    format_names: tuple[str, ...] = ()
    feedback_field: str | None = None
    race: bool = False


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


CapT = TypeVar("CapT")


@dataclass(frozen=True)
class Capability(Generic[CapT]):
    """The key of an opt-in part of the context: ``ctx.capability(PHASES)`` is a :class:`Phases`
    (a key, not the protocol class, so that type checkers infer what ``capability`` returns)."""

    name: str


class StrategyContext(Protocol):
    """What every strategy sees: the core of the engine's side of the Strategy contract.

    Read-only: the data (``train``, ``val``, ``initial_prompt``; the test split is out of
    reach), the ``settings`` and ``budget`` snapshots, progress (``iteration``, ``best_prompt``
    / ``best_val``: the best on val so far, ties keep the earlier; ``should_stop``). ``rng`` is
    seeded from the run's seed (every random choice goes through it, so a rerun and a resume
    choose the same); ``state`` is the strategy's resumable state (JSON values; checkpointed).

    Invariants: a strategy never calls a model itself; ``evaluate`` is cached, counted and
    within the budget; every iteration ends in exactly one ``record_iteration``, with an
    :class:`~reflex.api.Outcome`; ``BudgetExhausted`` from any action propagates (the engine
    ends the run with an honest final measurement). Anything more is an opt-in capability,
    asked for by key: ``ctx.capability(REASONING)`` (see the protocols below).
    """

    @property
    def train(self) -> Dataset: ...
    @property
    def val(self) -> Dataset: ...
    @property
    def initial_prompt(self) -> str: ...
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
    def best_prompt(self) -> str: ...
    @property
    def best_val(self) -> float | None: ...
    @property
    def should_stop(self) -> bool: ...

    def evaluate(
        self,
        prompt: str,
        examples: Sequence[Example] | None = None,
        label: str = "train",
        *,
        sampling: tuple[float, int] | None = None,
    ) -> EvalSnapshot:
        """Score ``prompt`` on ``examples`` (default: all of train); ``label``: their split;
        ``sampling``: ``(temperature, seed)`` to decode with instead of the run's (each pair is
        its own cache key, so a resumed run replays the same samples)."""
        ...

    def record_iteration(
        self,
        prompt: str,
        train: EvalSnapshot | None,
        outcome: Outcome | None = None,
        *,
        reasoning: str = "",
        change: float | None = None,
        components: Mapping[str, str] | None = None,
        lineage: Sequence[Mapping[str, Any]] = (),
        race: Mapping[str, Any] | None = None,
        accepted: bool | None = None,
        failed: str | None = None,
        rejected: str | None = None,
    ) -> IterationRecord:
        """Close one iteration: measured on val unless ``outcome`` is rejected or failed (None:
        val decides). ``train``: the strategy's train (or minibatch) snapshot, if any;
        ``components``: the candidate's named parts (``prompt`` is their rendering); ``lineage``:
        the candidates it added to the strategy's population (``IterationRecord.lineage``);
        ``race``: a raced candidate's rungs (``IterationRecord.race``; pass it with
        ``Outcome.rejected`` for one dropped on a partial score, which is never measured on val).
        ``accepted``/``failed``/``rejected``: deprecated spellings of ``outcome`` (a warning)."""
        ...

    def log(self, kind: str, **data: Any) -> None:
        """Append a strategy event (``kind`` plus JSON-serialisable fields) to events.jsonl."""
        ...

    def capability(self, key: Capability[CapT]) -> CapT:
        """The opt-in part of the context named by ``key`` (a ConfigurationError if unknown)."""
        ...


class Reasoning(Protocol):
    """The reasoning model (``REASONING``), for strategies with ``requires_reasoning_model``.

    Invariants: ``reason`` sends through the run's client (cached, counted under "reasoning",
    within the budget); an answer that stays unusable is recorded with ``fail_proposal`` and
    the run goes on. :func:`reflex.api.ask` does both, with one retry.
    """

    def reason(self, messages: Sequence[Mapping[str, str]] | str) -> str:
        """Ask the reasoning model; a plain string is sent as one user message."""
        ...

    def fail_proposal(self, purpose: str, error: str, **data: Any) -> None:
        """Record an answer unusable after its retry (``result.failed_proposals``)."""
        ...


class Components(Protocol):
    """The prompt as named components (``COMPONENTS``), for strategies that edit parts.

    Invariant: ``prompt_spec.render()`` is ``initial_prompt``; a strategy that edits the text
    as a whole ignores it (and its best prompt then has no components).
    """

    @property
    def prompt_spec(self) -> PromptSpec: ...


class Screening(Protocol):
    """Leakage screening ahead of a strategy's own val evaluations (``SCREENING``; ``gepa``).

    Invariants: ``leakage_screen`` returns the rejection reason when the prompt copies held-out
    text under strict leakage, else None; its flags land on the prompt's next
    ``record_iteration``, exactly as when ``record_iteration`` screens the candidate itself.
    """

    def leakage_screen(self, prompt: str) -> str | None: ...  # the reason, or None

    def format_screen(self, candidate: EvalSnapshot, incumbent: EvalSnapshot) -> str | None:
        """The format guard: a reason when more of ``candidate``'s answers break the JSON
        schema or the tool-call format than ``incumbent``'s on the same rows, else None."""
        ...


class Phases(Protocol):
    """Named phases of one run (``PHASES``): a composite strategy running others in turn.

    Invariants: ``phase`` is the current phase's name (the strategy's own name before any
    ``begin_phase``); each ``begin_phase`` opens a ``phase_history`` entry and, by default,
    restarts early stopping; ``stop`` (a :class:`StopReason`) is None while the run goes on,
    ``stop.per_phase`` is True for a stop a new phase clears; ``stop_reason`` says it in words.
    """

    @property
    def phase(self) -> str: ...
    @property
    def stop(self) -> StopReason | None: ...
    @property
    def stop_reason(self) -> str: ...

    def begin_phase(
        self, name: str, *, reset_patience: bool = True, max_iterations: int | None = None
    ) -> None:
        """Start a phase; ``max_iterations`` caps it (``should_stop``, with no ``stop``)."""
        ...

    def end_phase(self, **facts: Any) -> None: ...  # JSON facts for its phase_history entry


class Judging(Protocol):
    """The run's judge (``JUDGING``), for label-free strategies that compare outputs.

    Invariants: ``judge`` is the run's first model-graded metric or None; ``judge_pairs``
    asks it both orders (position bias), cached and counted under "judge", and raises a
    ConfigurationError when ``judge`` is None.
    """

    @property
    def judge(self) -> ModelGradedMetric | None: ...
    @property
    def label_free(self) -> bool: ...  # True when no train row has a reference answer

    def judge_pairs(self, rows: Sequence[tuple[Example, str, str]]) -> list[PairOutcome]:
        """Which output is better, per ``(example, first, second)``."""
        ...


class Strategies(Protocol):
    """The strategy registry (``STRATEGIES``), for composite strategies such as ``auto``.

    Invariant: a strategy built here runs with the same context (its iterations are the run's).
    """

    def strategies(self) -> Mapping[str, type[Strategy[Any]]]: ...  # every one, by name

    def build_strategy(self, name: str, options: Mapping[str, object]) -> Strategy[Any]:
        """A registered strategy with validated ``options`` (one-line ConfigurationError)."""
        ...


REASONING: Capability[Reasoning] = Capability("reasoning")
COMPONENTS: Capability[Components] = Capability("components")
SCREENING: Capability[Screening] = Capability("screening")
PHASES: Capability[Phases] = Capability("phases")
JUDGING: Capability[Judging] = Capability("judging")
STRATEGIES: Capability[Strategies] = Capability("strategies")


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
    - ``optimize(ctx)``: never calls a model directly; uses ``ctx.evaluate``, the reasoning
      capability, ``ctx.record_iteration`` and stops when ``ctx.should_stop`` is True. It may keep
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
