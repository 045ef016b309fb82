"""``aevyra-reflex report RUN -o report.html``: one self-contained HTML page of a run."""

from __future__ import annotations

from pathlib import Path

import click

from reflex.cli_runs import RUN_DIR

__all__ = ["add_record_commands", "report_command"]


@click.command("report")
@click.argument("run")
@RUN_DIR
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("report.html"),
    show_default=True,
    help="Where to write the HTML file.",
)
def report_command(run: str, run_dir: str, output: Path) -> None:
    """Write RUN's report as one HTML file (no scripts, no network).

    RUN: a run id (a unique prefix is enough), a run folder or a result.json.
    """
    from reflex.cli import _with_errors

    _with_errors(lambda **_: _report(run, run_dir, output))()


def _report(run: str, run_dir: str, output: Path) -> None:
    from reflex.errors import ConfigurationError
    from reflex.records import read_json, resolve_run
    from reflex.report_html import render_report

    path = resolve_run(run, run_dir)
    if not (path / "result.json").is_file():
        raise ConfigurationError(
            f"run {path.name} has no result.json yet (still running or killed before the end); "
            f"finish it with `aevyra-reflex optimize ... --resume-from {path.name}`"
        )
    result = read_json(path / "result.json")
    meta = read_json(path / "run.json") if (path / "run.json").is_file() else {}
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(render_report(result, meta), encoding="utf-8")
    click.echo(f"wrote {output}")


def add_record_commands(cli: click.Group) -> None:
    """Register the commands that read run records: report (and check, export, verify)."""
    from reflex.cli_check import check_command

    cli.add_command(report_command)
    cli.add_command(check_command)
