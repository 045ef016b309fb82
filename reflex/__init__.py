"""aevyra-reflex: measure a prompt, improve it, and prove the gain on held-out data.

``import reflex`` is light: it never imports litellm, mlflow or wandb.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from reflex.hookspecs import hookimpl
    from reflex.optimizer import PromptOptimizer
    from reflex.result import (
        EvalSnapshot,
        IterationRecord,
        OptimizationResult,
        RunEnd,
        Sample,
        StopReason,
    )
    from reflex.types import Example, Metric, Score, Strategy

# Public names resolve on first use (PEP 562), so ``import reflex.cli`` does not pay for pydantic,
# the optimizer and the dataset loaders before ``--help`` is printed.
_LAZY = {
    "BudgetConfig": "reflex.config",
    "BudgetExhausted": "reflex.errors",
    "Callback": "reflex.callbacks",
    "ConfigurationError": "reflex.errors",
    "Dataset": "reflex.data.dataset",
    "DatasetError": "reflex.errors",
    "DegenerateSeedError": "reflex.errors",
    "EvalSnapshot": "reflex.result",
    "Example": "reflex.types",
    "IterationRecord": "reflex.result",
    "Metric": "reflex.types",
    "OptimizationResult": "reflex.result",
    "PluginError": "reflex.errors",
    "PromptOptimizer": "reflex.optimizer",
    "ProviderError": "reflex.errors",
    "ReflexError": "reflex.errors",
    "RunConfig": "reflex.config",
    "RunEnd": "reflex.result",
    "Sample": "reflex.result",
    "Score": "reflex.types",
    "StopReason": "reflex.result",
    "StorageError": "reflex.errors",
    "Strategy": "reflex.types",
    "TransientProviderError": "reflex.errors",
    "hookimpl": "reflex.hookspecs",
    "load_dataset": "reflex.data.dataset",
    "prompt_messages": "reflex.data.demos",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reflex' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__version__ = "0.1.0"

__all__ = [
    "BudgetConfig",
    "BudgetExhausted",
    "Callback",
    "ConfigurationError",
    "Dataset",
    "DatasetError",
    "DegenerateSeedError",
    "EvalSnapshot",
    "Example",
    "IterationRecord",
    "Metric",
    "OptimizationResult",
    "PluginError",
    "PromptOptimizer",
    "ProviderError",
    "ReflexError",
    "RunConfig",
    "RunEnd",
    "Sample",
    "Score",
    "StopReason",
    "StorageError",
    "Strategy",
    "TransientProviderError",
    "__version__",
    "hookimpl",
    "load_dataset",
    "prompt_messages",
]
