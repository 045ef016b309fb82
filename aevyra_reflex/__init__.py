"""The user API: ``from aevyra_reflex import PromptOptimizer, MLflowCallback, WandbCallback``.

This is the one list of what a user of the package imports (``reflex`` re-exports it, lazily);
plugin authors import :mod:`reflex.api`, tracker adapters :mod:`reflex.api.tracking`
(docs/architecture.md, "Three doors"). The tracker callbacks and the built-in metric classes load
on first use, so importing this package never imports mlflow or wandb.
"""

from __future__ import annotations

import importlib
import typing

from reflex.callbacks import Callback
from reflex.config import BudgetConfig, RunConfig
from reflex.data.dataset import Dataset, load_dataset
from reflex.data.demos import prompt_messages
from reflex.errors import (
    BudgetExhausted,
    ConfigurationError,
    DatasetError,
    DegenerateSeedError,
    PluginError,
    ProviderError,
    ReflexError,
    StorageError,
    TransientProviderError,
)
from reflex.grid.compare import Comparison, compare
from reflex.hookspecs import hookimpl
from reflex.optimizer import PromptOptimizer
from reflex.result import VERSION as __version__
from reflex.result import (
    EvalSnapshot,
    Example,
    IterationRecord,
    OptimizationResult,
    RunEnd,
    Sample,
    StopReason,
)
from reflex.types import Metric, Score, Strategy

if typing.TYPE_CHECKING:
    from reflex_metrics.bleu import SacreBleu
    from reflex_metrics.chrf import SacreChrf
    from reflex_metrics.contains import Contains
    from reflex_metrics.exact_match import ExactMatch
    from reflex_metrics.f1 import TokenF1
    from reflex_metrics.judge import LLMJudge
    from reflex_metrics.length import LengthLimit
    from reflex_metrics.numeric import NumericMatch
    from reflex_metrics.regex import RegexMatch
    from reflex_metrics.rouge import RougeScore
    from reflex_mlflow import MLflowCallback
    from reflex_wandb import WandbCallback

# tests/test_public_api.py: every name here exists, is named in docs/architecture.md ("Three
# doors"), and the list is exactly the module's public names.
__all__ = [
    "BudgetConfig",
    "BudgetExhausted",
    "Callback",
    "Comparison",
    "ConfigurationError",
    "Contains",
    "Dataset",
    "DatasetError",
    "DegenerateSeedError",
    "EvalSnapshot",
    "ExactMatch",
    "Example",
    "IterationRecord",
    "LLMJudge",
    "LengthLimit",
    "MLflowCallback",
    "Metric",
    "NumericMatch",
    "OptimizationResult",
    "PluginError",
    "PromptOptimizer",
    "ProviderError",
    "ReflexError",
    "RegexMatch",
    "RougeScore",
    "RunConfig",
    "RunEnd",
    "SacreBleu",
    "SacreChrf",
    "Sample",
    "Score",
    "StopReason",
    "StorageError",
    "Strategy",
    "TokenF1",
    "TransientProviderError",
    "WandbCallback",
    "__version__",
    "compare",
    "hookimpl",
    "load_dataset",
    "prompt_messages",
]

# The tracker callbacks: in the adapters, each behind its extra.
_TRACKERS = {
    "MLflowCallback": ("reflex_mlflow", "mlflow"),
    "WandbCallback": ("reflex_wandb", "wandb"),
}
# The built-in metric classes the builder takes (``.add_metric(RougeScore())``): in reflex_metrics.
_METRICS = {
    "Contains": "reflex_metrics.contains",
    "ExactMatch": "reflex_metrics.exact_match",
    "LLMJudge": "reflex_metrics.judge",
    "LengthLimit": "reflex_metrics.length",
    "NumericMatch": "reflex_metrics.numeric",
    "RegexMatch": "reflex_metrics.regex",
    "RougeScore": "reflex_metrics.rouge",
    "SacreBleu": "reflex_metrics.bleu",
    "SacreChrf": "reflex_metrics.chrf",
    "TokenF1": "reflex_metrics.f1",
}


def __getattr__(name: str) -> typing.Any:
    if name in _METRICS:
        return getattr(importlib.import_module(_METRICS[name]), name)
    if name not in _TRACKERS:
        raise AttributeError(f"module 'aevyra_reflex' has no attribute {name!r}")
    module_name, extra = _TRACKERS[name]
    try:
        module = importlib.import_module(module_name)
        return getattr(module, name)
    except (ImportError, AttributeError) as exc:
        raise ImportError(
            f"{name} needs the {extra} extra: pip install 'aevyra-reflex[{extra}]' ({exc})"
        ) from exc


def __dir__() -> list[str]:
    return sorted({*globals(), *_TRACKERS, *_METRICS})
