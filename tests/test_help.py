"""``aevyra-reflex --help`` answered from a table, without loading plugins (issue 21, item 3)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import click
from click.testing import CliRunner

from reflex import __version__
from reflex.cli import build_cli
from reflex.cli.common import Group
from reflex.cli.help import COMMANDS, help_only, summary_cli
from reflex.hookspecs import hookimpl

PROBE = (
    "import sys\n"
    "from reflex.cli import main\n"
    "try:\n    main([{arg!r}])\nexcept SystemExit:\n    pass\n"
    "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'reflex.judging', "
    "'reflex_strategies', 'reflex_metrics', 'reflex.plugins', 'litellm'))), file=sys.stderr)"
)


def _first_paragraph(command: click.Command) -> str:
    return " ".join((command.help or "").split("\n\n")[0].split())


def test_the_table_matches_every_built_in_command() -> None:
    cli = build_cli()
    assert sorted(COMMANDS) == sorted(cli.commands)
    for name, command in cli.commands.items():
        assert " ".join(COMMANDS[name].split()) == _first_paragraph(command), name


def test_the_summary_prints_what_the_real_group_prints() -> None:
    for args in (["--help"], ["-h"], ["--version"], []):
        real = CliRunner().invoke(build_cli(), args)
        summary = CliRunner().invoke(summary_cli(Group, __version__), args)
        assert (summary.exit_code, summary.output) == (real.exit_code, real.output), args


def test_help_imports_no_plugin_pydantic_or_judge() -> None:
    for arg in ("--help", "--version"):
        done = subprocess.run(
            [sys.executable, "-c", PROBE.format(arg=arg)], capture_output=True, text=True
        )
        assert done.stderr.strip().splitlines()[-1] == "[]", (arg, done.stderr)


class _Commands:
    @hookimpl
    def register_commands(self, cli: click.Group) -> None:
        cli.add_command(click.Command("ping", help="Answer pong."))


def test_a_plugin_in_this_process_gets_the_real_help(register_plugin: Any) -> None:
    assert help_only(["--help"])
    register_plugin(_Commands(), name="ping-help")
    assert not help_only(["--help"])
    assert not help_only(["optimize", "--help"])
