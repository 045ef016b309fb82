"""``aevyra-reflex runs`` and ``aevyra-reflex show RUN``: what is in a run directory."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from reflex.checks.leakage import describe as describe_leak
from reflex.cli.common import RunDir
from reflex.config import default
from reflex.errors import ConfigurationError

if TYPE_CHECKING:
    from reflex.run.resume import RunInfo

__all__ = ["runs_command", "show_command"]

RUN_DIR = click.option("--run-dir", default=default("run_dir"), show_default=True, type=RunDir())


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _cost(row: Mapping[str, Any]) -> str:
    """``$0.0123``, ``unpriced (37 calls)`` or ``$0.0123 + unpriced (5 calls)``; ``-`` when
    the run recorded no usage yet."""
    from reflex.models.usage import cost_text

    cost, unknown = row.get("cost"), int(row.get("cost_unknown") or 0)
    if cost is None and not unknown:
        return "-"
    return cost_text(
        cost if isinstance(cost, int | float) else None, int(row.get("calls") or 0), unknown
    )


_COST_KEYS = ("calls", "cost_unknown")  # shown within the cost


@click.command("runs")
@RUN_DIR
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def runs_command(run_dir: str, as_json: bool) -> None:
    """List the runs in the run directory (newest last)."""
    from reflex.run.resume import list_runs

    rows = [run.summary() for run in list_runs(run_dir)]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"no runs in {run_dir}")
        return
    columns = [
        "id",
        "status",
        "strategy",
        "iterations",
        "baseline",
        "best_val",
        "final",
        "cost",
        "dataset",
    ]
    table = [[_cost(row) if c == "cost" else _fmt(row[c]) for c in columns] for row in rows]
    cost = columns.index("cost")
    widths = [24, *[12] * (len(columns) - 1)]
    widths[cost] = max(12, *(len(cells[cost]) for cells in table))  # "unpriced (37 calls)"
    for cells in [columns, *table]:
        click.echo("  ".join(f"{v:<{w}}" for v, w in zip(cells, widths, strict=True)))


def _find(run_dir: str, run_id: str) -> RunInfo:
    from reflex.run.resume import list_runs

    runs = list_runs(run_dir)
    matches = [r for r in runs if r.run_id == run_id] or [
        r for r in runs if r.run_id.startswith(run_id)
    ]
    if len(matches) != 1:
        known = ", ".join(r.run_id for r in runs[-5:]) or "none"
        what = "no run" if not matches else "several runs"
        raise ConfigurationError(f"{what} matching {run_id!r} in {run_dir} (latest: {known})")
    return matches[0]


def _diff(before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), "initial", "best", lineterm=""
    )
    return "\n".join(lines) or "(unchanged)"


@click.command("show")
@click.argument("run_id")
@RUN_DIR
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show_command(run_id: str, run_dir: str, as_json: bool) -> None:
    """Print one run's summary, iterations and the prompt diff (RUN_ID may be a prefix)."""
    from reflex.cli.common import with_errors

    with_errors(lambda **_: _show(run_id, run_dir, as_json))()


def _show(run_id: str, run_dir: str, as_json: bool) -> None:
    run = _find(run_dir, run_id)
    _warn_if_tampered(run.path)
    result = run.result or {}
    iterations = result.get("iterations") or (run.checkpoint or {}).get("iterations") or []
    initial = _read_text(run.path / "prompts" / "initial.txt")
    best = result.get("best_prompt") or (run.checkpoint or {}).get("best_prompt") or initial
    if as_json:
        click.echo(
            json.dumps(
                {
                    "summary": run.summary(),
                    "iterations": iterations,
                    "initial_prompt": initial,
                    "best_prompt": best,
                    "prompt_versions": result.get("prompt_versions") or [],
                    "diff": _diff(initial, best),
                },
                indent=2,
            )
        )
        return
    summary = run.summary()
    for key, value in summary.items():
        if key == "cost":
            click.echo(f"{key:<11} {_cost(summary)}")
        elif key != "p_value" and key not in _COST_KEYS:  # p: the paired-test line below
            click.echo(f"{key:<11} {_fmt(value)}")
    if result.get("stop_reason"):
        click.echo(f"{'stopped':<11} {result['stop_reason']}")
    if isinstance(result.get("significance"), dict):
        from reflex.checks.stats import PairedTest

        click.echo(f"{'paired test':<11} {PairedTest(**result['significance']).summary()}")
    by_iteration = _version_ids(result, iterations, initial, best)
    click.echo("\niter  train   val     version           parent            verdict")
    for r in iterations:
        verdict = (
            r.get("failed")
            or r.get("rejected")
            or ("best" if r.get("is_best") else ("kept" if r.get("accepted") else "not kept"))
        )
        version = by_iteration.get(r["iteration"]) if r.get("is_best") else None
        ids = f"{version['id']:<17} {version.get('parent') or '-':<17}" if version else " " * 35
        click.echo(
            f"{r['iteration']:>4}  {_fmt(r.get('score')):<7} {_fmt(r.get('val_score')):<7} "
            f"{ids} {verdict}"
        )
        for flag in r.get("leakage") or []:
            click.echo(f"      leakage: {describe_leak(flag)}")
    click.echo("\n" + _diff(initial, best))


def _version_ids(
    result: Mapping[str, Any], iterations: Sequence[Mapping[str, Any]], initial: str, best: str
) -> dict[object, Mapping[str, Any]]:
    """Accepted versions by iteration (reflex.checks.versions); prints the best prompt's version."""
    from reflex.checks.versions import record_versions

    versions = record_versions({"initial_prompt": initial, "iterations": iterations, **result})
    found = [v for v in versions if v.get("text") == best]
    if found:
        click.echo(f"{'version':<11} {found[-1]['id']} (best prompt)")
    return {v.get("iteration"): v for v in versions[1:]}


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def _warn_if_tampered(path: Path) -> None:
    """A warning on stderr when the sealed record changed since its run ended (see verify)."""
    from reflex.checks.audit import SEAL_FILE, verify_run

    if not (path / SEAL_FILE).is_file():
        return
    outcome = verify_run(path)
    if outcome.status == "tampered":
        changed = "; ".join(outcome.changes[:3])
        click.echo(
            f"warning: run {path.name} changed since it was sealed ({changed}); what follows may "
            f"not be what the run recorded (aevyra-reflex verify {path.name})",
            err=True,
        )
