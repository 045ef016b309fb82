"""aevyra-reflex: measure a prompt, improve it, and prove the gain on held-out data.

``reflex`` is the user API of :mod:`aevyra_reflex` (the same list, written there), loaded on
first use (PEP 562), so ``import reflex.cli`` does not pay for pydantic, the optimizer and the
dataset loaders before ``--help`` is printed. ``import reflex`` never imports litellm, mlflow or
wandb.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from reflex.result import VERSION as _VERSION

if TYPE_CHECKING:
    from aevyra_reflex import *  # noqa: F403  (the user API, typed)

__version__ = _VERSION


def __getattr__(name: str) -> Any:
    import importlib.util

    # A submodule (``from reflex import plugins``) is the import system's to load, not a name.
    if not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is None:
        users = importlib.import_module("aevyra_reflex")
        if name in users.__all__:
            value = getattr(users, name)
            globals()[name] = value
            return value
    elif name == "__all__":
        return importlib.import_module("aevyra_reflex").__all__
    raise AttributeError(f"module 'reflex' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *importlib.import_module("aevyra_reflex").__all__})
