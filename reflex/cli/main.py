"""The ``aevyra-reflex`` click group: built-in commands plus whatever plugins add.

``--help`` stays fast: litellm is imported only when a model is called.
"""

from __future__ import annotations

import json
import os
import sys

import click

from reflex.cli.common import EXIT_USAGE, Group, registry
from reflex.cli.help import help_only, summary_cli
from reflex.errors import ReflexError

__all__ = ["build_cli", "main"]


def _plugins_command() -> click.Command:
    @click.command("plugins")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    def plugins(as_json: bool) -> None:
        """List the loaded plugins and what each registers."""
        infos = registry().plugins()
        if as_json:
            click.echo(json.dumps([info.to_dict() for info in infos], indent=2))
            return
        for info in infos:
            where = f"{info.distribution} {info.version}" if info.distribution else "in-process"
            parts = [
                f"strategies: {', '.join(info.strategies)}" if info.strategies else "",
                f"metrics: {', '.join(info.metrics)}" if info.metrics else "",
                f"options: {', '.join(info.options)}" if info.options else "",
                f"prompt sources: {', '.join(info.prompt_sources)}" if info.prompt_sources else "",
                "commands" if info.commands else "",
                f"datasets: {', '.join(s + ':' for s in info.dataset_sources)}"
                if info.dataset_sources
                else "",
            ]
            click.echo(f"{info.name} ({where})  " + "; ".join(p for p in parts if p))

    return plugins


def build_cli() -> click.Group:
    """The click group with built-in commands plus whatever plugins add."""
    from reflex import __version__

    @click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(__version__, prog_name="aevyra-reflex")
    def cli() -> None:
        """aevyra-reflex: measure a prompt, improve it, and prove the gain on held-out data."""

    try:
        reg = registry()
    except ReflexError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    from reflex.cli.optimize import make_optimize

    cli.add_command(make_optimize(reg))
    from reflex.cli.sync import make_sync

    cli.add_command(make_sync(reg))
    cli.add_command(_plugins_command())
    from reflex.cli.runs import runs_command, show_command

    cli.add_command(runs_command)
    cli.add_command(show_command)
    from reflex.cli.compare import compare_command
    from reflex.cli.judge_check import judge_check

    cli.add_command(compare_command)
    cli.add_command(judge_check)
    from reflex.cli.report import add_record_commands

    add_record_commands(cli)
    reg.pm.hook.register_commands(cli=cli)
    return cli


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if help_only(sys.argv[1:] if argv is None else argv):  # no plugin loaded for the list
        from reflex import __version__

        summary_cli(Group, __version__).main(args=argv, prog_name="aevyra-reflex")
        return
    build_cli().main(args=argv, prog_name="aevyra-reflex")
