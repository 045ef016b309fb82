"""W&B adapter: ``WandbCallback`` and the ``--wandb`` options of ``aevyra-reflex optimize``.

``WandbCallback`` loads lazily, so the CLI can list the options (``reflex_wandb.cli``) without
importing wandb; the callback module itself imports wandb at its top.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reflex_wandb.callback import WandbCallback

__all__ = ["WandbCallback"]


def __getattr__(name: str) -> Any:
    if name == "WandbCallback":
        from reflex_wandb.callback import WandbCallback

        return WandbCallback
    raise AttributeError(f"module 'reflex_wandb' has no attribute {name!r}")
