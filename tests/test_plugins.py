"""The plugin system: built-ins via entry points, third-party plugins by name, CLI hooks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import click
import pytest
from click.testing import CliRunner
from conftest import KEYWORD
from pydantic import BaseModel, ConfigDict

from reflex import Example, PluginError, PromptOptimizer, Score, __version__
from reflex.cli import build_cli
from reflex.hookspecs import hookimpl
from reflex.plugins import get_registry, register_plugin, unregister_plugin
from reflex.testing import FakeModel, RecordingCallback

SUFFIX = f" {KEYWORD}"


# --- a throwaway third-party plugin -------------------------------------------------------


class SuffixOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    suffix: str = SUFFIX


class SuffixStrategy:
    """Appends a suffix to the prompt and records exactly one iteration."""

    name: ClassVar[str] = "suffix"
    Options: ClassVar[type[BaseModel]] = SuffixOptions
    requires_reasoning_model: ClassVar[bool] = False

    def __init__(self, options: BaseModel) -> None:
        assert isinstance(options, SuffixOptions)
        self.options = options

    def optimize(self, ctx: Any) -> None:
        candidate = ctx.initial_prompt + self.options.suffix
        snapshot = ctx.evaluate(candidate)
        ctx.record_iteration(candidate, snapshot, reasoning="append a suffix")


class LengthOk:
    """1 when the output is at most ``max_chars`` characters long."""

    name = "length_ok"
    requires_reference = False

    def __init__(self, max_chars: int = 12) -> None:
        self.max_chars = max_chars

    def score(self, output: str, example: Example) -> Score:
        if len(output.strip()) <= self.max_chars:
            return Score(1.0)
        return Score(0.0, feedback=f"output has {len(output.strip())} chars")


class SuffixPlugin:
    @hookimpl
    def register_strategies(self, register: Any) -> None:
        register(SuffixStrategy)

    @hookimpl
    def register_metrics(self, register: Any) -> None:
        register("length_ok", LengthOk)


class DuplicateIterative:
    @hookimpl
    def register_strategies(self, register: Any) -> None:
        register(type("Dup", (SuffixStrategy,), {"name": "iterative"}))


class DuplicateMetric:
    @hookimpl
    def register_metrics(self, register: Any) -> None:
        register("exact_match", LengthOk)


class ShoutCallback(RecordingCallback):
    def __init__(self, volume: str) -> None:
        super().__init__()
        self.volume = volume


CREATED: list[ShoutCallback] = []


class ShoutPlugin:
    @hookimpl
    def register_optimize_options(self, register: Any) -> None:
        options = [
            click.Option(["--shout"], is_flag=True, help="Record the lifecycle."),
            click.Option(["--shout-volume"], default="loud"),
        ]

        def to_callbacks(values: dict[str, Any]) -> list[ShoutCallback]:
            if not values["shout"]:
                return []
            callback = ShoutCallback(values["shout_volume"])
            CREATED.append(callback)
            return [callback]

        register(options, to_callbacks)


class HelloPlugin:
    @hookimpl
    def register_commands(self, cli: click.Group) -> None:
        @cli.command("hello")
        @click.argument("who", default="world")
        def hello(who: str) -> None:
            """Say hello."""
            click.echo(f"hello {who}")


# --- built-ins ------------------------------------------------------------------------------


def test_builtins_load_through_entry_points() -> None:
    infos = {info.name: info for info in get_registry().plugins()}
    assert {"exact_match", "iterative"} <= set(infos)
    for name in ("exact_match", "iterative"):
        assert infos[name].distribution == "aevyra-reflex"
        assert infos[name].version
    assert infos["exact_match"].metrics == ["exact_match"]
    assert infos["iterative"].strategies == ["iterative"]
    assert get_registry().strategy("iterative").name == "iterative"
    assert get_registry().metric("exact_match").name == "exact_match"


# --- a third-party plugin used by name ------------------------------------------------------


def test_third_party_plugin_from_builder(
    fake_model: FakeModel, dataset_file: Path, tmp_path: Path
) -> None:
    register_plugin(SuffixPlugin(), name="suffix-plugin")
    recorder = RecordingCallback()
    result = (
        PromptOptimizer()
        .set_dataset(dataset_file)
        .add_provider("fake/task")
        .add_metric("length_ok")
        .set_strategy("suffix")
        .configure(run_dir=str(tmp_path / ".reflex"), max_workers=4)
        .run("Classify the sentiment.", callbacks=[recorder])
    )
    assert result.completed
    assert len(result.iterations) == 1
    assert result.best_prompt == "Classify the sentiment." + SUFFIX
    assert result.final is not None and result.final.system_prompt == result.best_prompt
    assert result.final.mean_score == 1.0
    assert result.baseline is not None and result.baseline.mean_score < 1.0
    assert set(result.final.scores_by_metric) == {"length_ok"}
    assert recorder.hooks == [
        "on_run_start",
        "on_baseline",
        "on_iteration",
        "on_final",
        "on_run_end",
    ]
    # No reasoning model was needed or called.
    assert all(r.model == "fake/task" for r in fake_model.requests)


def test_third_party_plugin_from_cli(
    fake_model: FakeModel,
    dataset_file: Path,
    prompt_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    register_plugin(SuffixPlugin(), name="suffix-plugin")
    out = tmp_path / "results.json"
    result = CliRunner().invoke(
        build_cli(),
        [
            "optimize",
            str(dataset_file),
            str(prompt_file),
            "-m",
            "fake/task",
            "--metric",
            "length_ok",
            "-s",
            "suffix",
            "--results-json",
            str(out),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["best_prompt"] == "Classify the sentiment." + SUFFIX
    assert data["final"]["mean_score"] == 1.0
    assert [it["iteration"] for it in data["iterations"]] == [1]
    assert (tmp_path / ".reflex").is_dir()


def test_third_party_plugin_is_listed(capsys: pytest.CaptureFixture[str]) -> None:
    register_plugin(SuffixPlugin(), name="suffix-plugin")
    info = {i.name: i for i in get_registry().plugins()}["suffix-plugin"]
    assert info.strategies == ["suffix"]
    assert info.metrics == ["length_ok"]
    assert info.distribution is None
    unregister_plugin("suffix-plugin")
    assert "suffix-plugin" not in {i.name for i in get_registry().plugins()}
    with pytest.raises(PluginError, match="unknown strategy 'suffix'"):
        get_registry().strategy("suffix")


# --- errors -----------------------------------------------------------------------------------


def test_duplicate_strategy_names_both_plugins() -> None:
    with pytest.raises(PluginError) as excinfo:
        register_plugin(DuplicateIterative(), name="dup-plugin")
    message = str(excinfo.value)
    assert "'iterative'" in message
    assert "dup-plugin" in message and "plugin 'iterative'" in message
    # The failed registration is rolled back: the built-in still works, the intruder is gone.
    assert "dup-plugin" not in {i.name for i in get_registry().plugins()}
    assert get_registry().strategy("iterative").requires_reasoning_model is True


def test_duplicate_metric_names_both_plugins() -> None:
    with pytest.raises(PluginError, match=r"metric 'exact_match'.*'exact_match'.*'dup-metric'"):
        register_plugin(DuplicateMetric(), name="dup-metric")
    assert get_registry().metric("exact_match").name == "exact_match"


def test_unknown_names_list_available() -> None:
    register_plugin(SuffixPlugin(), name="suffix-plugin")
    with pytest.raises(
        PluginError, match=r"unknown strategy 'nope'; available: .*iterative.*suffix"
    ):
        PromptOptimizer().set_strategy("nope")
    with pytest.raises(
        PluginError, match=r"unknown metric 'nope'; available: .*exact_match, .*length, length_ok"
    ):
        PromptOptimizer().add_metric("nope")


def _invoke(args: list[str]) -> Any:
    return CliRunner().invoke(build_cli(), args, catch_exceptions=False)


def _optimize(dataset_file: Path, prompt_file: Path, *options: str) -> Any:
    """``optimize DATASET PROMPT -m fake/task OPTIONS...`` through the CLI."""
    return _invoke(["optimize", str(dataset_file), str(prompt_file), "-m", "fake/task", *options])


def test_unknown_strategy_on_cli_lists_available(
    fake_model: FakeModel, dataset_file: Path, prompt_file: Path
) -> None:
    register_plugin(SuffixPlugin(), name="suffix-plugin")
    result = _optimize(dataset_file, prompt_file, "-s", "nope")
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert line.startswith("error: unknown strategy 'nope'; available: ") and "\n" not in line
    assert {"iterative", "suffix"} <= set(line.split("available: ")[1].split(", "))
    assert fake_model.requests == []


def test_unknown_strategy_option_is_one_line(
    fake_model: FakeModel,
    dataset_file: Path,
    prompt_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    register_plugin(SuffixPlugin(), name="suffix-plugin")
    result = _optimize(
        dataset_file,
        prompt_file,
        "--metric",
        "length_ok",
        "-s",
        "suffix",
        "--strategy-option",
        "nope=1",
    )
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error:")
    assert "'nope'" in lines[0] and "suffix" in lines[0]
    assert "Traceback" not in result.output
    assert fake_model.requests == []


def test_strategy_option_reaches_strategy(
    fake_model: FakeModel,
    dataset_file: Path,
    prompt_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    register_plugin(SuffixPlugin(), name="suffix-plugin")
    out = tmp_path / "results.json"
    result = _optimize(
        dataset_file,
        prompt_file,
        "--metric",
        "length_ok",
        "-s",
        "suffix",
        "--strategy-option",
        "suffix= Be brief.",
        "--results-json",
        str(out),
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["iterations"][0]["system_prompt"] == "Classify the sentiment. Be brief."
    # The suffix does not shorten the answers, so the initial prompt stays the best.
    assert data["best_prompt"] == data["final"]["system_prompt"] == "Classify the sentiment."


# --- CLI hooks ----------------------------------------------------------------------------


def test_register_optimize_options_adds_option_and_callback(
    fake_model: FakeModel,
    dataset_file: Path,
    prompt_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    CREATED.clear()
    register_plugin(SuffixPlugin(), name="suffix-plugin")
    register_plugin(ShoutPlugin(), name="shout-plugin")
    cli = build_cli()
    help_text = _invoke(["optimize", "--help"]).output
    assert "--shout" in help_text and "--shout-volume" in help_text

    args = [
        "optimize",
        str(dataset_file),
        str(prompt_file),
        "-m",
        "fake/task",
        "--metric",
        "length_ok",
        "-s",
        "suffix",
    ]
    result = CliRunner().invoke(
        cli, [*args, "--shout", "--shout-volume", "max"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert len(CREATED) == 1
    callback = CREATED[0]
    assert callback.volume == "max"
    assert callback.hooks == [
        "on_run_start",
        "on_baseline",
        "on_iteration",
        "on_final",
        "on_run_end",
    ]
    run_result = callback.calls[-1][1][0]
    assert run_result.best_prompt == "Classify the sentiment." + SUFFIX

    # Without the flag the plugin adds no callback, and the run is unaffected.
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert len(CREATED) == 1

    info = {i.name: i for i in get_registry().plugins()}["shout-plugin"]
    assert info.options == ["--shout", "--shout-volume"]


def test_register_commands_adds_command() -> None:
    register_plugin(HelloPlugin(), name="hello-plugin")
    result = _invoke(["hello", "reflex"])
    assert result.exit_code == 0
    assert result.output == "hello reflex\n"
    assert "hello" in _invoke(["--help"]).output
    assert {i.name: i for i in get_registry().plugins()}["hello-plugin"].commands is True
    assert "hello-plugin (in-process)  commands" in _invoke(["plugins"]).output.splitlines()


# --- `aevyra-reflex plugins` ------------------------------------------------------------------


def test_plugins_command_text() -> None:
    register_plugin(SuffixPlugin(), name="suffix-plugin")
    result = _invoke(["plugins"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert f"exact_match (aevyra-reflex {__version__})  metrics: exact_match" in lines
    assert f"iterative (aevyra-reflex {__version__})  strategies: iterative" in lines
    assert "suffix-plugin (in-process)  strategies: suffix; metrics: length_ok" in lines


def test_plugins_command_json() -> None:
    register_plugin(SuffixPlugin(), name="suffix-plugin")
    result = _invoke(["plugins", "--json"])
    assert result.exit_code == 0
    data = {entry["name"]: entry for entry in json.loads(result.output)}
    assert data["exact_match"]["distribution"] == "aevyra-reflex"
    assert data["exact_match"]["version"] == __version__
    assert data["exact_match"]["metrics"] == ["exact_match"]
    assert data["iterative"]["strategies"] == ["iterative"]
    assert data["suffix-plugin"] == {
        "name": "suffix-plugin",
        "distribution": None,
        "version": None,
        "strategies": ["suffix"],
        "metrics": ["length_ok"],
        "options": [],
        "prompt_sources": [],
        "commands": False,
        "dataset_sources": [],
    }
