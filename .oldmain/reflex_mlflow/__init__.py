"""MLflow adapter: ``MLflowCallback`` and the ``--mlflow`` options of ``aevyra-reflex optimize``.

``MLflowCallback`` loads lazily, so the CLI can list the options (``reflex_mlflow.cli``) without
importing mlflow; the callback module itself imports mlflow at its top.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reflex_mlflow.callback import MLflowCallback

__all__ = ["MLflowCallback"]


def __getattr__(name: str) -> Any:
    if name == "MLflowCallback":
        from reflex_mlflow.callback import MLflowCallback

        return MLflowCallback
    raise AttributeError(f"module 'reflex_mlflow' has no attribute {name!r}")
