"""Plugin hooks. Each hook receives a ``register`` callback (or the CLI group) and returns nothing."""

from __future__ import annotations

from typing import Any

import pluggy

__all__ = ["hookimpl", "hookspec"]

hookspec = pluggy.HookspecMarker("reflex")
hookimpl = pluggy.HookimplMarker("reflex")


@hookspec
def register_strategies(register: Any) -> None:
    """Register strategy classes: ``register(StrategyClass)``; the name is ``StrategyClass.name``."""


@hookspec
def register_metrics(register: Any) -> None:
    """Register metric factories: ``register(name, factory)``; ``factory(**options)`` returns a Metric."""


@hookspec
def register_optimize_options(register: Any) -> None:
    """Add ``optimize`` CLI options: ``register(options, to_callbacks)`` with click options and a function from parsed values to callbacks."""


@hookspec
def register_commands(cli: Any) -> None:
    """Add commands to the ``aevyra-reflex`` click group."""
