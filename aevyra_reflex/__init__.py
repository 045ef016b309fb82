"""Public facade: ``from aevyra_reflex import PromptOptimizer, MLflowCallback, WandbCallback``.

The tracker callbacks load lazily so importing this package never imports mlflow or wandb.
"""

from __future__ import annotations

import importlib
from typing import Any

from reflex import *  # noqa: F403 - the facade re-exports the core API
from reflex import __all__ as _core_all

__all__ = sorted([*_core_all, "MLflowCallback", "WandbCallback"])

_LAZY = {
    "MLflowCallback": ("reflex_mlflow", "mlflow"),
    "WandbCallback": ("reflex_wandb", "wandb"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'aevyra_reflex' has no attribute {name!r}")
    module_name, extra = _LAZY[name]
    try:
        module = importlib.import_module(module_name)
        return getattr(module, name)
    except (ImportError, AttributeError) as exc:
        raise ImportError(f"{name} needs the {extra} extra: pip install "
                          f"'aevyra-reflex[{extra}]' ({exc})") from exc
