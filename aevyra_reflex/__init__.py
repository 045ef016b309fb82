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
    prompt_messages,
)

# reflex.__all__ plus the lazily loaded tracker callbacks and built-in metric classes;
# tests/test_meta.py keeps them in step.
__all__ = [
    "BudgetConfig",
    "BudgetExhausted",
    "Callback",
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
    "hookimpl",
    "load_dataset",
    "prompt_messages",
]

_LAZY = {
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
