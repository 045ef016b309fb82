"""The opt-in parts of a strategy's context, and the iteration verdict ``record_iteration`` takes.

A strategy sees the core :class:`reflex.types.StrategyContext`; anything more it asks for by key,
``ctx.capability(JUDGING)`` and so on (the protocols and keys are in :mod:`reflex.types`).
:class:`OptIn` holds the screening, judging and strategy-registry parts of
:class:`reflex.run.context.RunContext`; :func:`verdict` turns an :class:`~reflex.result.Outcome`
(or the deprecated ``accepted``/``failed``/``rejected`` keywords) into the three facts the
engine records.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from reflex.errors import ConfigurationError
from reflex.judging.judge import judge_channel
from reflex.judging.pairwise import compare_all
from reflex.plugins import build_options, get_registry
from reflex.result import EvalSnapshot, Outcome, PairOutcome
from reflex.types import (
    COMPONENTS,
    JUDGING,
    PHASES,
    REASONING,
    SCREENING,
    STRATEGIES,
    Capability,
    Components,
    Example,
    Judging,
    ModelGradedMetric,
    Phases,
    Reasoning,
    Screening,
    Strategies,
    Strategy,
    StrategyContext,
)

if TYPE_CHECKING:
    from reflex.config import RunConfig
    from reflex.data.dataset import Dataset
    from reflex.run.screening import CandidateScreen
    from reflex.run.session import Session

__all__ = ["LEGACY_FLAGS", "OptIn", "offered", "verdict"]

LEGACY_FLAGS = frozenset({"accepted", "failed", "rejected"})
"""The keywords ``record_iteration`` took before :class:`Outcome` (deprecated, one release)."""


def verdict(
    outcome: Outcome | None, legacy: Mapping[str, Any]
) -> tuple[bool | None, str | None, str | None]:
    """``(accepted, failed, rejected)`` as the engine records them.

    ``accepted`` None: val decides. An old-style call (``accepted=``, ``failed=``, ``rejected=``)
    keeps its exact meaning and warns (DeprecationWarning, attributed to the strategy's line).
    """
    unknown = sorted(set(legacy) - LEGACY_FLAGS)
    if unknown:
        raise TypeError(f"record_iteration() got an unexpected keyword argument {unknown[0]!r}")
    if legacy:
        if outcome is not None:
            raise TypeError("record_iteration(): pass an Outcome or the old keywords, not both")
        warnings.warn(
            "record_iteration(accepted=, failed=, rejected=) is deprecated and goes in the next "
            "release: pass an Outcome (Outcome.accepted(), Outcome.declined(), "
            "Outcome.rejected(reason), Outcome.failed(reason)) or none (val decides)",
            DeprecationWarning,
            stacklevel=3,
        )
        return legacy.get("accepted"), legacy.get("failed"), legacy.get("rejected")
    if outcome is None:
        return None, None, None
    if outcome.kind == "failed":
        return False, outcome.reason, None
    if outcome.kind == "rejected":
        return False, None, outcome.reason
    return outcome.kind == "accepted", None, None


class Everything(
    StrategyContext, Reasoning, Components, Screening, Phases, Judging, Strategies, Protocol
):
    """The core and every capability: what the engine's context implements."""


def offered(ctx: Everything) -> dict[Capability[Any], object]:
    """Every capability key with what it gives: the context itself, typed by each protocol."""
    return {
        REASONING: ctx,
        COMPONENTS: ctx,
        SCREENING: ctx,
        PHASES: ctx,
        JUDGING: ctx,
        STRATEGIES: ctx,
    }


class OptIn:
    """The screening (``SCREENING``), judging (``JUDGING``) and strategy-registry
    (``STRATEGIES``) parts of the context."""

    _session: Session
    _screen: CandidateScreen
    train: Dataset
    config: RunConfig

    def format_screen(self, candidate: EvalSnapshot, incumbent: EvalSnapshot) -> str | None:
        """The format guard's rejection reason for ``candidate`` vs ``incumbent`` on the same
        minibatch (:meth:`CandidateScreen.format_screen`), or None; pass it as
        ``Outcome.rejected(reason)`` and skip the val evaluation."""
        return self._screen.format_screen(candidate, incumbent)

    def leakage_screen(self, prompt: str) -> str | None:
        """Check a candidate for copied held-out text before a strategy scores it on val itself.

        Returns the rejection reason under ``strict_leakage`` when it copies some (pass it as
        ``record_iteration(..., Outcome.rejected(reason))`` and skip the val evaluation), else None.
        The flags land on the next ``record_iteration`` of this prompt (and its ``leakage``
        event), exactly as when ``record_iteration`` screens the candidate itself.
        """
        return self._screen.screen(prompt)

    @property
    def judge(self) -> ModelGradedMetric | None:
        """The run's first model-graded metric (e.g. an ``LLMJudge``), or None; read-only use."""
        metrics = self._session.evaluator.metrics
        return next((m for m in metrics if isinstance(m, ModelGradedMetric)), None)

    @property
    def label_free(self) -> bool:
        """True when no train row has a reference answer."""
        return all(example.ideal is None for example in self.train)

    def judge_pairs(self, rows: Sequence[tuple[Example, str, str]]) -> list[PairOutcome]:
        """Ask the run's judge, per ``(example, first output, second output)``, which is better.

        Both orders are asked (position bias); calls are cached and counted under "judge".
        See :mod:`reflex.judging.pairwise`. Raises ConfigurationError when the run has no judge.
        """
        metric = self.judge
        if metric is None:
            raise ConfigurationError("pairwise judging needs a judge metric: add one (--judge)")
        self._session.budget.check_evaluation(0)  # the clock and cost limits still apply
        call = judge_channel(self._session.client, metric.judge)
        templates = self.config.reasoning_templates
        return self._session.run_in_budget(compare_all(call, metric, rows, templates))

    def strategies(self) -> Mapping[str, type[Strategy[Any]]]:
        """Every registered strategy class by name."""
        registry = get_registry()
        return MappingProxyType({name: cls for name, (_, cls) in registry.strategies.items()})

    def build_strategy(self, name: str, options: Mapping[str, object]) -> Strategy[Any]:
        """A registered strategy with validated ``options`` (a one-line ConfigurationError)."""
        cls = get_registry().strategy(name)
        return cls(build_options(cls, options))
