"""``--wandb`` options for ``aevyra-reflex optimize`` (the ``wandb`` plugin).

This module must stay light: the CLI loads every plugin to build ``--help``, so wandb is only
imported (through the callback) when a run actually asks for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from reflex.api import ConfigurationError, hookimpl
from reflex.api.tracking import wanted

if TYPE_CHECKING:
    from reflex.api import Callback

__all__ = ["OPTIONS", "prompt_alias_moved", "register_optimize_options", "to_callbacks"]

MODES = ["online", "offline", "disabled"]

OPTIONS: list[click.Option] = [
    click.Option(
        ["--wandb"],
        is_flag=True,
        help="Log the run to Weights & Biases (implied by any other --wandb-* option).",
    ),
    click.Option(["--wandb-project"], metavar="NAME", help="W&B project [default: aevyra-reflex]."),
    click.Option(["--wandb-entity"], metavar="NAME", help="W&B entity (user or team)."),
    click.Option(
        ["--wandb-mode"],
        type=click.Choice(MODES),
        help="offline writes locally, no network or API key (wandb sync later) "
        "[default: WANDB_MODE, else online].",
    ),
    click.Option(["--wandb-run-name"], metavar="NAME", help="W&B run name."),
    click.Option(
        ["--wandb-tag"], multiple=True, metavar="TAG", help="Add a tag to the W&B run (repeatable)."
    ),
    click.Option(
        ["--wandb-log-prompts"],
        is_flag=True,
        help="Also log a table of every iteration's prompt and reasoning.",
    ),
]


def to_callbacks(values: dict[str, Any]) -> list[Callback]:
    """The options' values -> ``[WandbCallback(...)]``, or ``[]`` when W&B is not asked for."""
    if not wanted(values, "wandb"):
        return []
    try:
        from reflex_wandb.callback import WandbCallback
    except ImportError as exc:
        raise ConfigurationError(
            f"--wandb needs wandb ({exc}): pip install 'aevyra-reflex[wandb]'"
        ) from None
    return [
        WandbCallback(
            project=values["wandb_project"] or "aevyra-reflex",
            run_name=values["wandb_run_name"],
            entity=values["wandb_entity"],
            tags=list(values["wandb_tag"]),
            mode=values["wandb_mode"],
            log_prompt_each_iter=values["wandb_log_prompts"],
        )
    ]


@hookimpl
def register_optimize_options(register: Callable[..., None]) -> None:
    register(OPTIONS, to_callbacks)


@hookimpl
def prompt_alias_moved(
    name: str,
    alias: str,
    version: str,
    previous: str | None,
    run_id: str | None,
    previous_run_id: str | None,
    prompt: str,
    action: str,
    run_dir: str,
) -> str | None:
    """A registry alias moved (``promote`` / ``rollback``): the same alias on the W&B artifact
    of the saved prompt, when a run of the move was logged to W&B (:mod:`reflex_wandb.aliases`)."""
    try:
        from reflex_wandb.aliases import mirror_alias
    except ImportError:
        return None  # wandb is not installed: no run of this machine was logged to W&B
    return mirror_alias(
        name, alias, version, previous, run_id, previous_run_id, prompt, action, run_dir
    )
