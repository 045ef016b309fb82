"""MLflow adapter: ``MLflowCallback``, the ``--mlflow`` options of ``aevyra-reflex optimize``,
``ReflexPromptOptimizer`` (reflex inside ``mlflow.genai.optimize_prompts``) and the ``mlflow:`` /
``mlflow-traces:`` dataset sources.

Both classes load lazily, so the CLI can list the options (``reflex_mlflow.cli``) without
importing mlflow; their modules import mlflow at their top.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reflex_mlflow.callback import MLflowCallback
    from reflex_mlflow.optimizer import ReflexPromptOptimizer

__all__ = ["MLflowCallback", "ReflexPromptOptimizer"]


def __getattr__(name: str) -> Any:
    if name == "MLflowCallback":
        from reflex_mlflow.callback import MLflowCallback

        return MLflowCallback
    if name == "ReflexPromptOptimizer":
        from reflex_mlflow.optimizer import ReflexPromptOptimizer

        return ReflexPromptOptimizer
    raise AttributeError(f"module 'reflex_mlflow' has no attribute {name!r}")
