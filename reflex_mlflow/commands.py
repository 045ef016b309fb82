"""``aevyra-reflex promote RUN --alias A`` and ``aevyra-reflex rollback NAME --alias A``.

Registered by the ``mlflow`` plugin (:func:`reflex_mlflow.cli.register_commands`); mlflow is
imported only when one of them runs. Exit codes as ``check``'s: 0 moved (or nothing to do),
1 refused by the gate (the figures are printed), 2 usage or configuration error.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reflex.api import ReflexError

if TYPE_CHECKING:
    from reflex_mlflow.promotion import Move

__all__ = ["EXIT_REFUSED", "EXIT_USAGE", "promote_command", "rollback_command"]

EXIT_REFUSED = 1  # check's EXIT_REGRESSION
EXIT_USAGE = 2

_ALIAS = click.option("--alias", default="production", show_default=True, help="The alias to move.")
_URI = click.option(
    "--mlflow-tracking-uri",
    "tracking_uri",
    metavar="URI",
    help="The MLflow store [default: the run's, else MLFLOW_TRACKING_URI].",
)

_RUN_DIR = click.option("--run-dir", default=".reflex", show_default=True, help="Runs folder.")


def _guarded(action: Callable[[], Move]) -> Move:
    """``action``'s Move; a configuration or MLflow error is one line and exit 2."""
    try:
        return action()
    except ReflexError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    except Exception as exc:
        if type(exc).__module__.split(".")[0] != "mlflow":
            raise
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        click.echo(f"error: MLflow: {first}", err=True)
        sys.exit(EXIT_USAGE)


@click.command("promote")
@click.argument("run")
@_ALIAS
@_URI
@click.option(
    "--dataset",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Gate on every row of FILE [default: the run's test rows, from its dataset file].",
)
@click.option(
    "--tolerance",
    type=click.FloatRange(min=0.0),
    default=0.0,
    show_default=True,
    help="Allowed drop below the version the alias holds now.",
)
@click.option("--api-base", default=None, help="Endpoint, if the run's was stored redacted.")
@click.option("--judge-api-base", default=None, help="Where the run's judge calls go.")
@_RUN_DIR
def promote_command(
    run: str,
    alias: str,
    tracking_uri: str | None,
    dataset: Path | None,
    tolerance: float,
    api_base: str | None,
    judge_api_base: str | None,
    run_dir: str,
) -> None:
    """Point --alias at the prompt version RUN registered, if it does not regress against the
    version the alias holds now (check's rule, on the run's test rows or --dataset).

    Both prompts are scored through the run's response cache (the calls still to pay are
    printed first). Exit codes: 0 moved or already there, 1 refused (the alias is unchanged),
    2 usage or configuration error.
    """
    from reflex_mlflow.promotion import promote

    def action() -> Move:
        return promote(
            run,
            alias,
            tracking_uri=tracking_uri,
            dataset=dataset,
            tolerance=tolerance,
            run_dir=run_dir,
            api_base=api_base,
            judge_api_base=judge_api_base,
            echo=lambda line: click.echo(line, err=True),
        )

    move = _guarded(action)
    for line in move.lines:
        click.echo(line)
    if move.refused:
        click.echo(move.message, err=True)
        sys.exit(EXIT_REFUSED)
    _said(move)


def _said(move: Move) -> None:
    """What the move did, then what the other trackers did (W&B's alias), on stderr."""
    click.echo(move.message if move.changed else f"nothing to do: {move.message}", err=True)
    for line in move.mirrors:
        click.echo(line, err=True)


@click.command("rollback")
@click.argument("name")
@_ALIAS
@_URI
@_RUN_DIR
def rollback_command(name: str, alias: str, tracking_uri: str | None, run_dir: str) -> None:
    """Point --alias of the registered prompt NAME back at the version it held before the last
    promote.

    The move is recorded on the prompt (tag reflex.alias.ALIAS): a second rollback is a no-op.
    Exit codes: 0 moved or already there, 2 usage or configuration error.
    """
    from reflex_mlflow.promotion import rollback

    def action() -> Move:
        return rollback(name, alias, tracking_uri=tracking_uri, run_dir=run_dir)

    _said(_guarded(action))
