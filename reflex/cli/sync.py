"""The ``sync`` command: replay a recorded run into MLflow and/or W&B.

For a run whose tracker died mid-run (the adapters' circuit breaker switched it off; the run
directory kept everything) and for a run made with no tracker at all. The tracker options are
the ``optimize`` ones every tracker plugin registers (``--mlflow*``, ``--wandb*``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from reflex.cli.common import hidden_credentials, with_errors
from reflex.cli.options import setting
from reflex.errors import ConfigurationError, ReflexError

if TYPE_CHECKING:
    from reflex.callbacks import Callback
    from reflex.plugins import Registry

__all__ = ["make_sync"]


def make_sync(registry: Registry) -> click.Command:
    groups = list(registry.option_groups)

    def sync(run: str, run_dir: str, **params: Any) -> None:
        """Replay the recorded run RUN (an id, a run folder or its result.json) into MLflow
        and/or W&B.

        Name the trackers with their options, e.g. --mlflow-tracking-uri URI or --wandb-mode
        offline. A tracker run the run already has (saved in its .trackers.json, same store) is
        continued with only what it lacks; otherwise a new tracker run gets the whole run.
        A tracker the run did not reach is an error (exit 2) that names it; sync again.
        """
        from reflex.cli.optimize import print_trackers
        from reflex.run.records import resolve_run
        from reflex.run.trackers import replay_run

        callbacks: list[Callback] = []
        for group in groups:
            names = {o.name for o in group.options}
            callbacks.extend(group.to_callbacks({k: params.pop(k) for k in names}))
        if not callbacks:
            raise ConfigurationError("name a tracker to sync into: --mlflow ... or --wandb ...")
        folder = resolve_run(run, run_dir)
        with hidden_credentials(None, None):
            result = replay_run(folder, callbacks)
        name = result.run_id or folder.name
        missed = {_tracker(c): lines for c in callbacks if (lines := _missed(c))}
        landed = [c for c in callbacks if _tracker(c) not in missed]
        if landed:
            click.echo(f"synced run {name} into {', '.join(map(_tracker, landed))}", err=True)
            print_trackers(landed)
        if missed:
            # A sync that did not land is a failure: say what, and how to finish it.
            what = "; ".join(f"{tracker} ({lines[0]})" for tracker, lines in missed.items())
            raise ReflexError(
                f"run {name} was not synced into {what}; the run directory is unchanged: make "
                "the tracker reachable (or fix its options) and run sync again"
            )

    plugin_params = [option for group in groups for option in group.options]
    params: list[click.Parameter] = [
        click.Argument(["run"]),
        setting("--run-dir", help="Runs folder."),
        *plugin_params,
    ]
    return click.Command("sync", callback=with_errors(sync), params=params, help=sync.__doc__)


def _tracker(callback: Callback) -> str:
    return str(getattr(callback, "tracker", type(callback).__name__))


def _missed(callback: Callback) -> list[str]:
    """What a tracker callback did not get to its tracker (``GuardedCallback.missed``)."""
    missed = getattr(callback, "missed", None)
    return list(missed()) if callable(missed) else []
