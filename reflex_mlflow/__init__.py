"""MLflow adapter: ``MLflowCallback``, the ``--mlflow`` options of ``aevyra-reflex optimize``, and
metrics both ways (``as_scorer``: a reflex metric as an MLflow scorer; ``scorer_metric``: an
MLflow scorer as a reflex metric, ``--metric mlflow:<scorer>``).

Everything loads lazily, so the CLI can list the options (``reflex_mlflow.cli``) without
importing mlflow; the callback module itself imports mlflow at its top.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reflex_mlflow.callback import MLflowCallback
    from reflex_mlflow.scorers import as_scorer, scorer_metric

__all__ = ["MLflowCallback", "as_scorer", "scorer_metric"]

_WHERE = {
    "MLflowCallback": "reflex_mlflow.callback",
    "as_scorer": "reflex_mlflow.scorers",
    "scorer_metric": "reflex_mlflow.scorers",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'reflex_mlflow' has no attribute {name!r}")
