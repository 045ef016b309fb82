"""The plugin API: the one module strategy, metric and tracker plugins import from ``reflex``.

Everything a plugin needs is here, typed: the contracts (:class:`Metric`, :class:`Strategy`,
:class:`StrategyContext`), the records a strategy reads and callbacks receive, the errors a
plugin may raise, the documented reasoning helpers and the tracker-neutral tracking helpers.
Built-in plugins (``reflex_strategies``, ``reflex_metrics``, ``reflex_mlflow``,
``reflex_wandb``) use this module and nothing else from ``reflex`` (a meta-test checks it), so a
third-party plugin can do whatever they do.
"""

from __future__ import annotations

from reflex.callbacks import Callback
from reflex.errors import BudgetExhausted, ConfigurationError, ReflexError
from reflex.hookspecs import hookimpl
from reflex.result import EvalSnapshot, IterationRecord, OptimizationResult, Sample
from reflex.types import Example, JudgeCall, Message, Metric, ModelGradedMetric, Score, Strategy

__all__ = [
    "BudgetExhausted",
    "Callback",
    "ConfigurationError",
    "EvalSnapshot",
    "Example",
    "IterationRecord",
    "JudgeCall",
    "Message",
    "Metric",
    "ModelGradedMetric",
    "OptimizationResult",
    "ReflexError",
    "Sample",
    "Score",
    "Strategy",
    "hookimpl",
]
