"""Public facade: ``from aevyra_reflex import PromptOptimizer, MLflowCallback, WandbCallback``.

The tracker callbacks load lazily so importing this package never imports mlflow or wandb.
"""

from __future__ import annotations

import importlib
import typing

from reflex import (
    BudgetConfig,
    BudgetExhausted,
    Callback,
    ConfigurationError,
    Dataset,
    DatasetError,
    DegenerateSeedError,
    EvalSnapshot,
    Example,
    IterationRecord,
    Metric,
    OptimizationResult,
    PluginError,
    PromptOptimizer,
    ProviderError,
    ReflexError,
    RunConfig,
    RunEnd,
    Sample,
    Score,
    StopReason,
    StorageError,
    Strategy,
    TransientProviderError,
    __version__,
    hookimpl,
    load_dataset,
)

# reflex.__all__ plus the lazily loaded tracker callbacks; tests/test_meta.py keeps them in step.
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
    "MLflowCallback",
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
    "WandbCallback",
    "__version__",
    "hookimpl",
    "load_dataset",
]

_LAZY = {
    "MLflowCallback": ("reflex_mlflow", "mlflow"),
    "WandbCallback": ("reflex_wandb", "wandb"),
}


def __getattr__(name: str) -> typing.Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'aevyra_reflex' has no attribute {name!r}")
    module_name, extra = _LAZY[name]
    try:
        module = importlib.import_module(module_name)
        return getattr(module, name)
    except (ImportError, AttributeError) as exc:
        raise ImportError(
            f"{name} needs the {extra} extra: pip install 'aevyra-reflex[{extra}]' ({exc})"
        ) from exc
