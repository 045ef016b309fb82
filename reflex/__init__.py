"""aevyra-reflex: measure a prompt, improve it, and prove the gain on held-out data.

``import reflex`` is light: it never imports litellm, mlflow or wandb.
"""

from __future__ import annotations

from reflex.callbacks import Callback
from reflex.config import BudgetConfig, RunConfig
from reflex.dataset import Dataset, load_dataset
from reflex.errors import (
    BudgetExhausted,
    ConfigurationError,
    DatasetError,
    DegenerateSeedError,
    PluginError,
    ProviderError,
    ReflexError,
    TransientProviderError,
)
from reflex.hookspecs import hookimpl
from reflex.optimizer import PromptOptimizer
from reflex.result import EvalSnapshot, IterationRecord, OptimizationResult, Sample
from reflex.types import Example, Metric, Score, Strategy

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
    "Sample",
    "Score",
    "Strategy",
    "TransientProviderError",
    "__version__",
    "hookimpl",
    "load_dataset",
]
