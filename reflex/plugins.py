"""The plugin manager: built-ins and third-party plugins load the same way, from entry points.

Entry-point group ``reflex``. Each plugin module implements some of the hooks in
:mod:`reflex.hookspecs`. Names are unique across plugins: a duplicate raises a PluginError naming
both plugins; an unknown name lists the available ones.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import pluggy
from pydantic import BaseModel, ValidationError

from reflex import hookspecs
from reflex.data import sources
from reflex.errors import ConfigurationError, PluginError
from reflex.hookspecs import (
    CallbackFactory,
    DatasetReader,
    DatasetSourceRegistrar,
    MetricFactory,
    MetricRegistrar,
    OptionRegistrar,
    PromptResolver,
    PromptSourceRegistrar,
    StrategyRegistrar,
)
from reflex.redact import scrub
from reflex.types import Metric, Strategy

if TYPE_CHECKING:
    import click

_Source = TypeVar("_Source")

logger = logging.getLogger(__name__)

__all__ = [
    "PluginInfo",
    "Registry",
    "announce_alias_move",
    "build_options",
    "get_registry",
    "register_plugin",
    "reset_registry",
    "unregister_plugin",
]


@dataclass
class PluginInfo:
    """One loaded plugin and what it registered."""

    name: str
    distribution: str | None = None
    version: str | None = None
    strategies: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)
    prompt_sources: list[str] = field(default_factory=list)
    commands: bool = False
    dataset_sources: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "strategies": self.strategies,
            "metrics": self.metrics,
            "options": self.options,
            "prompt_sources": self.prompt_sources,
            "commands": self.commands,
            "dataset_sources": self.dataset_sources,
        }


@dataclass
class OptionGroup:
    """CLI options one plugin adds to ``optimize`` and how they become callbacks."""

    plugin: str
    options: list[click.Parameter]
    to_callbacks: CallbackFactory


def _claim(
    table: dict[str, tuple[str, _Source]], kind: str, scheme: str, plugin: str, source: _Source
) -> None:
    """Give ``scheme`` to ``plugin``'s ``source``; a scheme two plugins register is an error."""
    if scheme in table:
        raise PluginError(
            f"{kind} {scheme!r} is registered by both plugin {table[scheme][0]!r} and plugin "
            f"{plugin!r}"
        )
    table[scheme] = (plugin, source)


class Registry:
    """Strategies, metrics and CLI option groups collected from every registered plugin."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager("reflex")
        self.pm.add_hookspecs(hookspecs)
        self._loaded = False
        self._collected = False
        self.strategies: dict[str, tuple[str, type[Strategy[Any]]]] = {}
        self.metrics: dict[str, tuple[str, MetricFactory]] = {}
        self.option_groups: list[OptionGroup] = []
        self.sources: dict[str, tuple[str, DatasetReader]] = {}
        self.prompt_sources: dict[str, tuple[str, PromptResolver]] = {}
        self.info: dict[str, PluginInfo] = {}

    def load(self) -> Registry:
        if not self._loaded:
            self.pm.load_setuptools_entrypoints("reflex")
            self.pm.check_pending()
            self._loaded = True
        if not self._collected:
            self._collect()
        return self

    def register(self, plugin: ModuleType | object, name: str | None = None) -> str:
        """Register a plugin object in-process (tests, notebooks); returns its name."""
        registered = self.pm.register(plugin, name=name)
        if registered is None:
            raise PluginError(f"plugin {name!r} is blocked or already registered")
        self.pm.check_pending()
        self._collected = False
        return registered

    def unregister(self, name: str) -> None:
        self.pm.unregister(name=name)
        self._collected = False

    def _collect(self) -> None:
        self.strategies, self.metrics, self.option_groups, self.sources = {}, {}, [], {}
        self.prompt_sources = {}
        self.info = {name: PluginInfo(name=name) for name, _ in self.pm.list_name_plugin()}
        for plugin_name, dist in self.pm.list_plugin_distinfo():
            info = self.info[self.pm.get_name(plugin_name) or ""]
            info.distribution, info.version = dist.project_name, dist.version
        for impl in self.pm.hook.register_strategies.get_hookimpls():
            impl.function(register=self._strategy_registrar(impl.plugin_name))
        for impl in self.pm.hook.register_metrics.get_hookimpls():
            impl.function(register=self._metric_registrar(impl.plugin_name))
        for impl in self.pm.hook.register_optimize_options.get_hookimpls():
            impl.function(register=self._option_registrar(impl.plugin_name))
        for impl in self.pm.hook.register_dataset_sources.get_hookimpls():
            impl.function(register=self._dataset_source_registrar(impl.plugin_name))
        for impl in self.pm.hook.register_prompt_sources.get_hookimpls():
            impl.function(register=self._prompt_source_registrar(impl.plugin_name))
        for impl in self.pm.hook.register_commands.get_hookimpls():
            self.info[impl.plugin_name].commands = True
        self._collected = True

    def _strategy_registrar(self, plugin: str) -> StrategyRegistrar:
        def register(strategy_cls: type[Strategy[Any]]) -> None:
            _check_strategy(strategy_cls, plugin)
            name = strategy_cls.name
            if name in self.strategies:
                raise PluginError(
                    f"strategy {name!r} is registered by both plugin "
                    f"{self.strategies[name][0]!r} and plugin {plugin!r}"
                )
            self.strategies[name] = (plugin, strategy_cls)
            self.info[plugin].strategies.append(name)

        return register

    def _metric_registrar(self, plugin: str) -> MetricRegistrar:
        def register(name: str, factory: MetricFactory) -> None:
            if name in self.metrics:
                raise PluginError(
                    f"metric {name!r} is registered by both plugin "
                    f"{self.metrics[name][0]!r} and plugin {plugin!r}"
                )
            self.metrics[name] = (plugin, factory)
            self.info[plugin].metrics.append(name)

        return register

    def _option_registrar(self, plugin: str) -> OptionRegistrar:
        def register(options: Sequence[click.Parameter], to_callbacks: CallbackFactory) -> None:
            self.option_groups.append(OptionGroup(plugin, list(options), to_callbacks))
            self.info[plugin].options.extend(str(getattr(o, "opts", [o])[0]) for o in options)

        return register

    def _dataset_source_registrar(self, plugin: str) -> DatasetSourceRegistrar:
        def register(scheme: str, reader: DatasetReader) -> None:
            _claim(self.sources, "dataset source", scheme, plugin, reader)
            self.info[plugin].dataset_sources.append(scheme)

        return register

    def dataset_source(self, scheme: str) -> DatasetReader | None:
        """The reader of datasets named ``scheme:...``; None when no plugin registered it."""
        self.load()
        entry = self.sources.get(scheme)
        return entry[1] if entry is not None else None

    def _prompt_source_registrar(self, plugin: str) -> PromptSourceRegistrar:
        def register(scheme: str, resolve: PromptResolver) -> None:
            _claim(self.prompt_sources, "prompt source", scheme, plugin, resolve)
            self.info[plugin].prompt_sources.append(scheme)

        return register

    def prompt_source(self, scheme: str) -> PromptResolver | None:
        """The resolver of ``scheme:/...`` prompt URIs, or None when no plugin reads them."""
        self.load()
        entry = self.prompt_sources.get(scheme)
        return entry[1] if entry is not None else None

    def strategy(self, name: str) -> type[Strategy[Any]]:
        self.load()
        if name not in self.strategies:
            raise PluginError(
                f"unknown strategy {name!r}; available: "
                f"{', '.join(sorted(self.strategies)) or 'none'}"
            )
        return self.strategies[name][1]

    def metric(self, name: str, /, **options: Any) -> Metric:
        self.load()
        if name not in self.metrics:
            raise PluginError(
                f"unknown metric {name!r}; available: {', '.join(sorted(self.metrics)) or 'none'}"
            )
        factory = self.metrics[name][1]
        try:  # bind first: a TypeError from inside the factory is a plugin bug, not bad options
            inspect.signature(factory).bind(**options)
        except TypeError as exc:
            raise ConfigurationError(
                f"metric {name!r} cannot take options {options!r}: {exc}; see its docs for the "
                "options it needs"
            ) from None
        except ValueError:  # no signature to check (a builtin); let the call decide
            pass
        return factory(**options)

    def plugins(self) -> list[PluginInfo]:
        self.load()
        return sorted(self.info.values(), key=lambda info: info.name)


# Members a strategy class may leave out, and the default the registry gives it then.
_OPTIONAL_FLAGS = ("requires_reasoning_model", "derives_from_data", "auto_eligible")


def _check_strategy(cls: type[Strategy[Any]], plugin: str) -> None:
    """Refuse a strategy class that lacks a required member; default the optional flags.

    Checked once at registration, so the engine and ``auto`` read every member directly.
    """
    options = getattr(cls, "Options", None)
    problems = [
        "a str 'name'" if not isinstance(getattr(cls, "name", None), str) else "",
        "an 'Options' pydantic model"
        if not (isinstance(options, type) and issubclass(options, BaseModel))
        else "",
        "an 'optimize(ctx)' method" if not callable(getattr(cls, "optimize", None)) else "",
    ]
    missing = [p for p in problems if p]
    if missing:
        raise PluginError(
            f"plugin {plugin!r}: strategy class {cls.__name__} needs {', '.join(missing)} "
            "(see docs/plugins.md)"
        )
    for flag in _OPTIONAL_FLAGS:
        if not isinstance(getattr(cls, flag, None), bool):
            setattr(cls, flag, False)


_REGISTRY: list[Registry] = []


def get_registry() -> Registry:
    """The process-wide registry, with entry points loaded."""
    if not _REGISTRY:
        _REGISTRY.append(Registry())
    return _REGISTRY[0].load()


def register_plugin(plugin: ModuleType | object, name: str | None = None) -> str:
    """Register a plugin in-process, exactly as if it had been installed with an entry point."""
    registry = get_registry()
    registered = registry.register(plugin, name)
    try:
        registry.load()
    except PluginError:
        registry.unregister(registered)
        registry.load()
        raise
    return registered


def unregister_plugin(name: str) -> None:
    get_registry().unregister(name)


def reset_registry() -> None:
    """Forget every in-process registration (the next call reloads entry points)."""
    _REGISTRY.clear()


def announce_alias_move(
    *,
    name: str,
    alias: str,
    version: str,
    previous: str | None,
    run_id: str | None,
    previous_run_id: str | None,
    prompt: str,
    action: str,
    run_dir: str,
) -> list[str]:
    """Tell every ``prompt_alias_moved`` implementation that a registry alias moved; the lines
    they return. Each runs on its own: one that raises is logged and reported as a line (the
    alias has moved already; a mirror that failed never undoes it nor stops the others)."""
    values: dict[str, object] = {
        "name": name,
        "alias": alias,
        "version": version,
        "previous": previous,
        "run_id": run_id,
        "previous_run_id": previous_run_id,
        "prompt": prompt,
        "action": action,
        "run_dir": run_dir,
    }
    lines: list[str] = []
    for impl in get_registry().pm.hook.prompt_alias_moved.get_hookimpls():
        try:
            line = impl.function(**{arg: values[arg] for arg in impl.argnames})
        except Exception as exc:
            logger.warning("plugin %s: prompt_alias_moved failed", impl.plugin_name, exc_info=True)
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            line = f"{impl.plugin_name}: could not mirror @{alias}: {scrub(first)}"
        if line:
            lines.append(str(line))
    return lines


def _schemes() -> list[str]:
    return sorted(get_registry().sources)


# load_dataset("scheme:rest") reads through the registry (the data layer cannot import it).
sources.use_resolver((lambda scheme: get_registry().dataset_source(scheme), _schemes))


def distribution_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def build_options(strategy_cls: type[Strategy[Any]], values: Mapping[str, object]) -> BaseModel:
    """Validate strategy options; an unknown or bad key is a one-line ConfigurationError."""
    try:
        return strategy_cls.Options(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "?"
        known = ", ".join(sorted(strategy_cls.Options.model_fields)) or "none"
        raise ConfigurationError(
            f"strategy {strategy_cls.name!r} option {field!r}: {first['msg']} "
            f"(its options: {known})"
        ) from None
