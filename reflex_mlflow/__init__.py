"""MLflow adapter: ``MLflowCallback``, the ``--mlflow`` options of ``aevyra-reflex optimize``,
metrics both ways (``as_scorer``: a reflex metric as an MLflow scorer; ``scorer_metric``: an
MLflow scorer as a reflex metric, ``--metric mlflow:<scorer>``), ``ReflexPromptOptimizer`` (reflex
inside ``mlflow.genai.optimize_prompts``), the ``mlflow:`` / ``mlflow-traces:`` dataset sources,
and the prompt registry in and out (``load_prompt``, ``prompt_from_version``, ``promote``,
``rollback``; the ``prompts:/`` PROMPT and the ``promote`` / ``rollback`` commands).

Every name loads lazily, so the CLI can list the options (``reflex_mlflow.cli``) without
importing mlflow; their modules import mlflow at their top.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reflex_mlflow.callback import MLflowCallback
    from reflex_mlflow.optimizer import ReflexPromptOptimizer
    from reflex_mlflow.promotion import Move, promote, rollback
    from reflex_mlflow.prompts import load_prompt, prompt_from_version
    from reflex_mlflow.scorers import as_scorer, scorer_metric

__all__ = [
    "MLflowCallback",
    "Move",
    "ReflexPromptOptimizer",
    "as_scorer",
    "load_prompt",
    "promote",
    "prompt_from_version",
    "rollback",
    "scorer_metric",
]

_HOMES = {
    "MLflowCallback": "reflex_mlflow.callback",
    "Move": "reflex_mlflow.promotion",
    "ReflexPromptOptimizer": "reflex_mlflow.optimizer",
    "as_scorer": "reflex_mlflow.scorers",
    "promote": "reflex_mlflow.promotion",
    "rollback": "reflex_mlflow.promotion",
    "load_prompt": "reflex_mlflow.prompts",
    "prompt_from_version": "reflex_mlflow.prompts",
    "scorer_metric": "reflex_mlflow.scorers",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'reflex_mlflow' has no attribute {name!r}")
