"""One test per hook in reflex.hookspecs (tests/test_meta.py checks that each has one).

They use the fixtures of ``reflex.testing.pytest_plugin`` the way a plugin author would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import click
import pytest
from click.testing import CliRunner
from pydantic import BaseModel, ConfigDict

from reflex import (
    ConfigurationError,
    DatasetError,
    Example,
    PluginError,
    PromptOptimizer,
    Score,
    hookimpl,
    load_dataset,
)
from reflex.api import DatasetSourceRegistrar
from reflex.cli import build_cli
from reflex.plugins import announce_alias_move, get_registry
from reflex.testing import FakeModel, RecordingCallback


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = " Answer with one word."


class AppendStrategy:
    """Tries the prompt with ``text`` appended, once."""

    name: ClassVar[str] = "append"
    Options: ClassVar[type[BaseModel]] = _Options
    requires_reasoning_model: ClassVar[bool] = False

    def __init__(self, options: BaseModel) -> None:
        assert isinstance(options, _Options)
        self.options = options

    def optimize(self, ctx: Any) -> None:
        candidate = ctx.initial_prompt + self.options.text
        ctx.record_iteration(candidate, ctx.evaluate(candidate), reasoning="append")


class Short:
    """1.0 when the output has at most ``words`` words."""

    name = "short"
    requires_reference = False

    def __init__(self, words: int = 1) -> None:
        self.words = words

    def score(self, output: str, example: Example) -> Score:
        return Score(1.0 if len(output.split()) <= self.words else 0.0)


class StrategyPlugin:
    @hookimpl
    def register_strategies(self, register: Any) -> None:
        register(AppendStrategy)


class MetricPlugin:
    @hookimpl
    def register_metrics(self, register: Any) -> None:
        register("short", Short)


class OptionsPlugin:
    created: ClassVar[list[RecordingCallback]] = []

    @hookimpl
    def register_optimize_options(self, register: Any) -> None:
        def to_callbacks(values: dict[str, Any]) -> list[RecordingCallback]:
            if not values["record"]:
                return []
            self.created.append(RecordingCallback())
            return self.created[-1:]

        register([click.Option(["--record"], is_flag=True, help="Record calls.")], to_callbacks)


class CommandsPlugin:
    @hookimpl
    def register_commands(self, cli: click.Group) -> None:
        @cli.command("ping")
        def ping() -> None:
            """Answer pong."""
            click.echo("pong")


def _optimizer(dataset_file: Path, tmp_path: Path) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(dataset_file)
        .add_provider("fake/task")
        .configure(run_dir=str(tmp_path / ".reflex"), max_workers=4)
    )


def test_hook_register_strategies(
    register_plugin: Any, fake_model: FakeModel, dataset_file: Path, tmp_path: Path
) -> None:
    register_plugin(StrategyPlugin(), name="append-plugin")
    assert get_registry().strategy("append") is AppendStrategy
    result = (
        _optimizer(dataset_file, tmp_path)
        .add_metric("exact_match")
        .set_strategy("append")
        .run("Classify the sentiment.")
    )
    assert [record.reasoning for record in result.iterations] == ["append"]
    assert result.best_prompt == "Classify the sentiment. Answer with one word."


def test_hook_register_metrics(
    register_plugin: Any, fake_model: FakeModel, dataset_file: Path, tmp_path: Path
) -> None:
    register_plugin(MetricPlugin(), name="short-plugin")
    metric = get_registry().metric("short", words=2)
    assert metric.score("two words", Example("x", ())).value == 1.0
    assert metric.score("three words here", Example("x", ())).value == 0.0
    result = (
        _optimizer(dataset_file, tmp_path)
        .add_metric("short")
        .set_strategy("instructions")
        .configure(max_iterations=1)
        .run("Classify the sentiment.")
    )
    assert result.baseline is not None
    assert set(result.baseline.scores_by_metric) == {"short"}


def test_hook_register_optimize_options(
    register_plugin: Any,
    fake_model: FakeModel,
    dataset_file: Path,
    prompt_file: Path,
    tmp_path: Path,
    monkeypatch: Any,
) -> None:
    monkeypatch.chdir(tmp_path)
    OptionsPlugin.created.clear()
    register_plugin(OptionsPlugin(), name="options-plugin")
    register_plugin(StrategyPlugin(), name="append-plugin")
    cli = build_cli()
    assert "--record" in CliRunner().invoke(cli, ["optimize", "--help"]).output
    args = ["optimize", str(dataset_file), str(prompt_file), "-m", "fake/task", "-s", "append"]
    result = CliRunner().invoke(cli, [*args, "--record"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert [c.hooks[-1] for c in OptionsPlugin.created] == ["on_run_end"]


class SourcePlugin:
    @hookimpl
    def register_dataset_sources(self, register: DatasetSourceRegistrar) -> None:
        def read(rest: str) -> list[dict[str, str]]:
            if rest == "missing":
                raise ConfigurationError("memo:missing: no such memo")
            return [{"id": f"m{i}", "input": f"{rest} {i}", "ideal": rest} for i in range(4)]

        register("memo", read)


def test_hook_register_dataset_sources(
    register_plugin: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_plugin(SourcePlugin(), name="memo-plugin")
    data = load_dataset("memo:hello")
    assert (data.name, data.source, data.ids) == ("hello", "memo:hello", ["m0", "m1", "m2", "m3"])
    assert data[2].input == "hello 2" and data[2].ideal == "hello"
    with pytest.raises(ConfigurationError, match=r"^memo:missing: no such memo$"):
        load_dataset("memo:missing")
    with pytest.raises(DatasetError, match=r"no plugin reads datasets named other:.*memo:"):
        load_dataset("other:x")
    with pytest.raises(PluginError, match="dataset source 'memo' is registered by both"):
        register_plugin(SourcePlugin(), name="memo-again")
    # A file of that name wins over the source.
    monkeypatch.chdir(tmp_path)
    Path("memo:hello").write_text('{"id": "f", "input": "file", "ideal": "x"}\n')
    assert load_dataset("memo:hello").ids == ["f"]


def test_hook_register_commands(register_plugin: Any) -> None:
    register_plugin(CommandsPlugin(), name="ping-plugin")
    result = CliRunner().invoke(build_cli(), ["ping"])
    assert (result.exit_code, result.output) == (0, "pong\n")


def test_register_plugin_fixture_returns_the_name(register_plugin: Any) -> None:
    name = register_plugin(CommandsPlugin())
    assert name in {info.name for info in get_registry().plugins()}


def test_recording_callback_fixture(recording_callback: RecordingCallback) -> None:
    recording_callback.on_baseline("snapshot")
    assert recording_callback.hooks == ["on_baseline"]


class AliasWatcher:
    """Implements prompt_alias_moved with a subset of its arguments, as a plugin may."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, str | None]] = []

    @hookimpl
    def prompt_alias_moved(
        self, name: str, alias: str, version: str, run_id: str | None
    ) -> str | None:
        self.seen.append((name, alias, version, run_id))
        return f"watched @{alias} -> v{version}" if run_id else None


class BrokenMirror:
    @hookimpl
    def prompt_alias_moved(self, alias: str) -> str:
        raise RuntimeError(f"no route to http://user:secret@tracker.invalid for @{alias}")


def _moved(run_id: str | None) -> list[str]:
    return announce_alias_move(
        name="cat",
        alias="production",
        version="2",
        previous="1",
        run_id=run_id,
        previous_run_id=None,
        prompt="Classify.",
        action="promote",
        run_dir=".reflex",
    )


def test_hook_prompt_alias_moved(register_plugin: Any) -> None:
    assert _moved("r1") == []  # nobody listens: nothing to say
    watcher = AliasWatcher()
    register_plugin(watcher, name="watcher")
    assert _moved("r1") == ["watched @production -> v2"]
    assert _moved(None) == []  # None: the move is nothing to that plugin
    assert watcher.seen == [("cat", "production", "2", "r1"), ("cat", "production", "2", None)]
    # A plugin that raises is a line of its own (credentials scrubbed); the others still run.
    register_plugin(BrokenMirror(), name="broken")
    lines = _moved("r1")
    assert "watched @production -> v2" in lines and len(lines) == 2
    (failed,) = [line for line in lines if line.startswith("broken: ")]
    assert "could not mirror @production: no route to" in failed and "secret" not in failed
