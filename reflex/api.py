"""The plugin API: the one module strategy, metric and tracker plugins import from ``reflex``.

Everything a plugin needs is here, typed: the contracts (:class:`Metric`, :class:`Strategy`,
:class:`StrategyContext`), the records a strategy reads and callbacks receive, the errors a
plugin may raise, the documented reasoning helpers and the tracker-neutral tracking helpers
(:mod:`reflex.callbacks.tracking`, with the core redactor :mod:`reflex.redact`).
Built-in plugins (``reflex_strategies``, ``reflex_metrics``, ``reflex_mlflow``,
``reflex_wandb``) use this module and nothing else from ``reflex`` (a meta-test checks it), so a
third-party plugin can do whatever they do.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from reflex.callbacks import Callback
from reflex.errors import BudgetExhausted, ConfigurationError, ReflexError
from reflex.hookspecs import hookimpl
from reflex.result import EvalSnapshot, IterationRecord, OptimizationResult, Sample
from reflex.types import Example, JudgeCall, Message, Metric, ModelGradedMetric, Score, Strategy

# isort: split
# tracking helpers (for tracker adapters) ------------------------------------------------------
from reflex.callbacks.tracking import (
    GuardedCallback,
    ParamValue,
    baseline_metrics,
    iteration_metrics,
    iteration_row,
    metric_key,
    on_model_thread,
    parse_tag_pairs,
    run_params,
    run_tags,
    split_params,
    summary_metrics,
    wanted,
)
from reflex.redact import redact_data, redact_url, scrub

if TYPE_CHECKING:
    from reflex.config import RunConfig
    from reflex.data.dataset import Dataset

# What a callback's hooks receive besides the records. They resolve on first use: pydantic and
# the dataset loaders would slow down every --help, which loads each tracker's CLI options.
_LAZY = {"Dataset": "reflex.data.dataset", "RunConfig": "reflex.config"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reflex.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


# end of tracking helpers ----------------------------------------------------------------------

__all__ = [
    "BudgetExhausted",
    "Callback",
    "ConfigurationError",
    "Dataset",
    "EvalSnapshot",
    "Example",
    "GuardedCallback",
    "IterationRecord",
    "JudgeCall",
    "Message",
    "Metric",
    "ModelGradedMetric",
    "OptimizationResult",
    "ParamValue",
    "ReflexError",
    "RunConfig",
    "Sample",
    "Score",
    "Strategy",
    "baseline_metrics",
    "hookimpl",
    "iteration_metrics",
    "iteration_row",
    "metric_key",
    "on_model_thread",
    "parse_tag_pairs",
    "redact_data",
    "redact_url",
    "run_params",
    "run_tags",
    "scrub",
    "split_params",
    "summary_metrics",
    "wanted",
]
