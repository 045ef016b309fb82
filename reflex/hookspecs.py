"""Plugin hooks. Each receives a ``register`` callback (or the CLI group) and returns nothing."""

from __future__ import annotations

from typing import Any

import pluggy

__all__ = ["hookimpl", "hookspec"]

hookspec = pluggy.HookspecMarker("reflex")
hookimpl = pluggy.HookimplMarker("reflex")


@hookspec
def register_strategies(register: Any) -> None:
    """Register strategies: ``register(StrategyClass)``; its name is ``StrategyClass.name``."""


@hookspec
def register_metrics(register: Any) -> None:
    """Register metrics: ``register(name, factory)``; ``factory(**options)`` returns a Metric."""


@hookspec
def register_optimize_options(register: Any) -> None:
    """Add ``optimize`` options: ``register(click_options, to_callbacks(values) -> callbacks)``."""


@hookspec
def register_commands(cli: Any) -> None:
    """Add commands to the ``aevyra-reflex`` click group."""
