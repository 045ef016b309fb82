"""``aevyra-reflex report RUN -o report.html``: one self-contained HTML page of a run."""

from __future__ import annotations

from pathlib import Path

import click

from reflex.cli.common import OutputFile
from reflex.cli.runs import RUN_DIR

__all__ = ["add_record_commands", "report_command", "verify_command"]


@click.command("report")
@click.argument("run")
@RUN_DIR
@click.option(
    "-o",
    "--output",
    type=OutputFile(),
    default=Path("report.html"),
    show_default=True,
    help="Where to write the HTML file.",
)
@click.option(
    "--dataset",
    "dataset_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The run's dataset file, for the test rows' inputs and references (default: the "
    "file run.json names).",
)
def report_command(run: str, run_dir: str, output: Path, dataset_path: Path | None) -> None:
    """Write RUN's report as one HTML file (no scripts, no network).

    RUN: a run id (a unique prefix is enough), a run folder or a result.json.
    """
    from reflex.cli.common import with_errors

    with_errors(lambda **_: _report(run, run_dir, output, dataset_path))()


def _report(run: str, run_dir: str, output: Path, dataset_path: Path | None = None) -> None:
    from reflex.cli.outputs import refuse_clobbering
    from reflex.cli.report_html import render_report
    from reflex.data.files import atomic_write_text
    from reflex.errors import ConfigurationError
    from reflex.run.records import read_json, resolve_run
    from reflex.run.trackers import recorded_examples

    path = resolve_run(run, run_dir)
    refuse_clobbering({"-o": output}, {"run": path})
    if not (path / "result.json").is_file():
        raise ConfigurationError(
            f"run {path.name} has no result.json yet (still running or killed before the end); "
            f"finish it with `aevyra-reflex optimize ... --resume-from {path.name}`"
        )
    result = read_json(path / "result.json")
    meta = read_json(path / "run.json") if (path / "run.json").is_file() else {}
    if dataset_path is not None:
        refuse_clobbering({"-o": output}, {"dataset": dataset_path})
        meta = {**meta, "dataset_source": str(dataset_path)}
    examples = recorded_examples(path, dataset_path)
    atomic_write_text(output, render_report(result, meta, examples))
    click.echo(f"wrote {output}")


def add_record_commands(cli: click.Group) -> None:
    """Register the commands that read run records: report (and check, export, verify)."""
    from reflex.cli.check import check_command
    from reflex.cli.export import export_command

    cli.add_command(report_command)
    cli.add_command(check_command)
    cli.add_command(export_command)
    cli.add_command(verify_command)


@click.command("verify")
@click.argument("record")
@RUN_DIR
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def verify_command(record: str, run_dir: str, as_json: bool) -> None:
    """Check that RECORD (a run id, run folder or result.json) is unchanged since its run ended.

    Also proves from evaluations.jsonl, in one line, that the test rows were evaluated exactly
    twice (baseline and final prompts) and that selection used val rows only.

    Exit codes: 0 verified, 1 tampered (what changed is listed) or the test split not proven
    isolated, 2 cannot verify (no seal, or a signed record without REFLEX_SIGNING_KEY).
    """
    from reflex.cli.common import with_errors

    with_errors(lambda **_: _verify(record, run_dir, as_json))()


def _verify(record: str, run_dir: str, as_json: bool) -> None:
    import json
    import sys

    from reflex.checks.audit import SEAL_FILE, verify_run
    from reflex.checks.isolation import check_isolation
    from reflex.errors import ConfigurationError
    from reflex.run.records import resolve_run

    path = resolve_run(record, run_dir)
    if not (path / SEAL_FILE).is_file():
        raise ConfigurationError(
            f"run {path.name} has no {SEAL_FILE}: it never finished (or the seal was deleted); "
            "nothing to verify against"
        )
    outcome = verify_run(path)
    isolation = check_isolation(path)
    if as_json:
        click.echo(
            json.dumps(
                {"run": path.name, **outcome.__dict__, "isolation": isolation.__dict__}, indent=2
            )
        )
    elif outcome.status == "tampered":
        click.echo(f"TAMPERED: run {path.name} changed since it was sealed:")
        for change in outcome.changes:
            click.echo(f"  {change}")
    else:
        click.echo(f"{outcome.status}: run {path.name} ({outcome.note})")
    if not as_json:
        click.echo(isolation.line)
    code = {"verified": 0, "tampered": 1}.get(outcome.status, 2)
    sys.exit(1 if isolation.ok is False else code)
