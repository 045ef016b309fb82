"""Plugin hooks. Each receives a typed ``register`` callback (or the CLI group), returns nothing.

The registrar types are part of the plugin API (:mod:`reflex.api`): annotate a hook
implementation with them, e.g. ``def register_metrics(register: MetricRegistrar) -> None``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import click

    from reflex.callbacks import Callback
    from reflex.types import Metric, Strategy

__all__ = [
    "CallbackFactory",
    "DatasetReader",
    "DatasetSourceRegistrar",
    "MetricFactory",
    "MetricRegistrar",
    "OptionRegistrar",
    "PromptResolver",
    "PromptSourceRegistrar",
    "StrategyRegistrar",
    "hookimpl",
    "hookspec",
]

hookspec = pluggy.HookspecMarker("reflex")
hookimpl = pluggy.HookimplMarker("reflex")

# A metric factory takes the metric's options as keyword arguments (``--metric`` passes none).
MetricFactory = Callable[..., "Metric"]
# Turns the values of a plugin's ``optimize`` options (by parameter name) into callbacks.
CallbackFactory = Callable[[dict[str, Any]], Sequence["Callback"]]
StrategyRegistrar = Callable[[type["Strategy[Any]"]], None]
MetricRegistrar = Callable[[str, MetricFactory], None]
OptionRegistrar = Callable[[Sequence["click.Parameter"], CallbackFactory], None]
# Reads the rows of a dataset named ``scheme:rest``: ``reader(rest)`` returns records in any
# schema ``load_dataset`` takes (each with its stable ``id``), or raises a ReflexError.
DatasetReader = Callable[[str], Sequence[Mapping[str, object]]]
DatasetSourceRegistrar = Callable[[str, DatasetReader], None]
# Reads the prompt a URI names (``prompts:/cat@production``): a ``reflex.api.PromptSpec`` whose
# ``source`` is the URI pinned to a version (typed ``object`` here: the data layer is above).
PromptResolver = Callable[[str], object]
PromptSourceRegistrar = Callable[[str, PromptResolver], None]


@hookspec
def register_strategies(register: StrategyRegistrar) -> None:
    """Register strategies: ``register(StrategyClass)``; its name is ``StrategyClass.name``."""


@hookspec
def register_metrics(register: MetricRegistrar) -> None:
    """Register metrics: ``register(name, factory)``; ``factory(**options)`` returns a Metric."""


@hookspec
def register_optimize_options(register: OptionRegistrar) -> None:
    """Add ``optimize`` options: ``register(click_options, to_callbacks(values) -> callbacks)``."""


@hookspec
def register_prompt_sources(register: PromptSourceRegistrar) -> None:
    """Register prompt sources: ``register(scheme, resolve)``; a prompt given as ``scheme:/...``
    (CLI PROMPT, the builder's ``run``) is ``resolve(uri)``, a PromptSpec."""


@hookspec
def register_commands(cli: click.Group) -> None:
    """Add commands to the ``aevyra-reflex`` click group."""


@hookspec
def register_dataset_sources(register: DatasetSourceRegistrar) -> None:
    """Register dataset sources: ``register(scheme, reader)``; a dataset given as
    ``scheme:rest`` (``mlflow:qa``) is read as ``reader(rest)``'s records."""


@hookspec
def prompt_alias_moved(
    name: str,
    alias: str,
    version: str,
    previous: str | None,
    run_id: str | None,
    previous_run_id: str | None,
    prompt: str,
    action: str,
    run_dir: str,
) -> str | None:
    """A registry alias moved (``promote`` or ``rollback``, ``action``): ``@alias`` of prompt
    ``name`` now holds ``version`` (before: ``previous``), the prompt ``prompt`` (its string
    form) that reflex run ``run_id`` made (None: no reflex run made it); ``previous_run_id`` made
    the version it replaced; runs are found under ``run_dir``. Return one line saying what the
    plugin did, or None when the move is nothing to it (implement any subset of the names)."""
