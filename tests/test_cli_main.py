"""The ``aevyra-reflex`` entry point (reflex/cli/main.py): ``main``, ``build_cli`` and the
``plugins`` command, in-process and in a real process."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from reflex import __version__
from reflex.cli import build_cli, main
from reflex.hookspecs import hookimpl
from reflex.testing.pytest_plugin import RegisterPlugin


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(build_cli(), args, catch_exceptions=False)


# --- main: the process entry point -------------------------------------------------------------


def _cli_subprocess(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    code = "import reflex.cli; reflex.cli.main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_error_traceback_only_with_verbose_in_a_real_process(
    tmp_path: Path, prompt_file: Path
) -> None:
    args = ["optimize", "missing.jsonl", str(prompt_file), "-m", "openai/gpt-4o-mini"]
    quiet = _cli_subprocess(args, tmp_path)
    assert quiet.returncode == 2
    assert quiet.stderr.startswith("error: missing.jsonl")
    assert len(quiet.stderr.splitlines()) == 1
    assert "Traceback" not in quiet.stderr

    loud = _cli_subprocess([*args, "-v"], tmp_path)
    assert loud.returncode != 0
    assert "Traceback" in loud.stderr
    assert "DatasetError" in loud.stderr


def test_help() -> None:
    top = invoke(["--help"])
    assert top.exit_code == 0
    assert "optimize" in top.output and "plugins" in top.output
    sub = invoke(["optimize", "--help"])
    assert sub.exit_code == 0
    for flag in (
        "--model",
        "--metric",
        "--strategy",
        "--reasoning-model",
        "--results-json",
        "--max-workers",
        "--strategy-option",
    ):
        assert flag in sub.output, flag


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip()


def test_building_the_cli_does_not_import_litellm() -> None:
    code = "import reflex.cli, sys; reflex.cli.build_cli(); print('litellm' in sys.modules)"
    assert _python(code) == "False"


def test_help_and_plugins_import_no_metric_library() -> None:
    # Every plugin module is imported to register it; rouge-score (nltk, numpy) and sacrebleu
    # are imported only when their metric is built.
    code = (
        "import sys; from reflex.cli import main\n"
        "for args in (['--help'], ['plugins']):\n"
        "    try: main(args)\n"
        "    except SystemExit: pass\n"
        "heavy = ('rouge_score', 'nltk', 'numpy', 'sacrebleu')\n"
        "print('loaded:', [m for m in heavy if m in sys.modules])"
    )
    assert _python(code).splitlines()[-1] == "loaded: []"


def test_importing_the_package_imports_no_vendor() -> None:
    code = (
        "import reflex, aevyra_reflex, sys; "
        "print(any(m in sys.modules for m in ('litellm', 'mlflow', 'wandb')))"
    )
    assert _python(code) == "False"


def test_mlflow_callback_without_extra_says_how_to_install() -> None:
    if importlib.util.find_spec("mlflow") is not None:
        pytest.skip("mlflow is installed; the missing-extra message cannot be shown")
    with pytest.raises(ImportError, match=r"pip install 'aevyra-reflex\[mlflow\]'"):
        from aevyra_reflex import MLflowCallback  # noqa: F401


def test_main_keeps_litellm_on_its_local_cost_map(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # LiteLLM fetches its price table from the network at import unless told not to.
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP")
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"aevyra-reflex, version {__version__}\n"
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"


class _Ping:
    @hookimpl
    def register_commands(self, cli: click.Group) -> None:
        cli.add_command(click.Command("ping", help="Answer pong."))


def test_main_answers_help_from_the_real_group_once_a_plugin_is_registered(
    register_plugin: RegisterPlugin, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "ping" not in capsys.readouterr().out
    register_plugin(_Ping(), name="ping-main")
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    commands = capsys.readouterr().out.split("Commands:")[1].split()
    assert "ping" in commands and "optimize" in commands


def test_a_plugin_that_breaks_the_registry_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An installed plugin (a real distribution with a ``reflex`` entry point) that claims a
    built-in metric's name: the command line stops with exit 2 and one line naming both."""
    (tmp_path / "dup_metric_plugin.py").write_text(
        "from reflex.api import hookimpl\n"
        "@hookimpl\n"
        "def register_metrics(register):\n"
        "    register('exact_match', lambda: None)\n",
        encoding="utf-8",
    )
    info = tmp_path / "dup_metric_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: dup-metric-plugin\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text("[reflex]\ndup = dup_metric_plugin\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SystemExit) as done:
        main(["plugins"])
    assert done.value.code == 2
    shown = capsys.readouterr()
    [line] = shown.err.splitlines()
    assert line.startswith("error: metric 'exact_match' is registered by both plugin "), line
    assert "'dup'" in line and line.count("'exact_match'") == 2, line
    assert shown.out == ""


# --- plugins: what each loaded plugin registers ------------------------------------------------


def test_plugins_names_every_kind_a_tracker_plugin_registers() -> None:
    result = invoke(["plugins"])
    assert result.exit_code == 0, result.output
    lines = {line.split(" ", 1)[0]: line for line in result.output.splitlines()}
    mlflow = lines["mlflow"].split("  ", 1)
    assert mlflow[0] == f"mlflow (aevyra-reflex {__version__})"
    parts = mlflow[1].split("; ")
    assert parts[0] == "metrics: mlflow"
    assert parts[1].startswith("options: --mlflow, --mlflow-experiment, --mlflow-tracking-uri")
    assert parts[2:] == ["prompt sources: prompts", "commands", "datasets: mlflow:, mlflow-traces:"]
    assert lines["wandb"].endswith("  options: " + ", ".join(_flags("reflex_wandb.cli")))


def test_plugins_json_holds_what_the_text_shows() -> None:
    result = invoke(["plugins", "--json"])
    assert result.exit_code == 0, result.output
    entries = {entry["name"]: entry for entry in json.loads(result.output)}
    assert entries["mlflow"]["options"] == _flags("reflex_mlflow.cli")
    assert entries["mlflow"]["prompt_sources"] == ["prompts"]
    assert entries["mlflow"]["dataset_sources"] == ["mlflow", "mlflow-traces"]
    assert entries["mlflow"]["commands"] is True and entries["wandb"]["commands"] is False
    text = invoke(["plugins"]).output.splitlines()
    assert [line.split(" ", 1)[0] for line in text] == list(entries)


def _flags(module: str) -> list[str]:
    """The first flag of each option a tracker plugin adds to ``optimize``."""
    options = importlib.import_module(module).OPTIONS
    return [option.opts[0] for option in options]
