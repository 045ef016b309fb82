"""``aevyra-reflex compare``: each strategy x seed at the same metric-call budget, as a table.

It takes ``optimize``'s dataset, model, metric, split and budget options (not the per-run
ones: strategy, output files, resume) plus ``--strategies`` and ``--seeds``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import click

__all__ = ["compare_command"]

# optimize options that make no sense for a comparison of several runs.
_SKIP = {"strategy", "strategy_options", "output", "results_json", "resume", "resume_from", "seed"}


def _shared_params() -> list[click.Parameter]:
    from reflex.cli.options import optimize_options

    def holder() -> None:
        """Collects the parameters the decorators attach."""

    target: Any = holder
    for decorator in optimize_options():
        target = decorator(target)
    # Each decorator appended its parameter, so they are in the order optimize lists them.
    params: list[click.Parameter] = list(target.__click_params__)
    return [p for p in params if p.name not in _SKIP]


def _run(**params: Any) -> None:
    from reflex.cli.common import hidden_credentials

    logging.basicConfig(
        level=logging.DEBUG if params["verbose"] else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    with hidden_credentials(params.get("api_base"), params.get("reasoning_base_url")):
        _compare(params)


def _compare(params: dict[str, Any]) -> None:
    from reflex.cli.build import build_optimizer, positionals
    from reflex.optimizer import prompt_spec

    params = positionals(params)
    names = [n.strip() for n in params.pop("strategies").split(",") if n.strip()]
    if not names:
        raise click.BadParameter("give at least one strategy", param_hint="--strategies")
    seeds, out_dir = params.pop("seeds"), params.pop("out_dir")
    fixed = {"strategy": names[0], "strategy_options": (), "seed": 0}
    optimizer = build_optimizer({**params, **fixed})
    comparison = optimizer.compare(
        prompt_spec(params["prompt"]),
        names,
        seeds=seeds,
        max_calls=params["max_calls"],
        directory=out_dir,
    )
    click.echo(comparison.table())
    click.echo(f"saved {Path(comparison.directory) / 'compare.json'} and compare.md", err=True)


def _make() -> click.Command:
    from reflex.cli.common import with_errors

    extra = [
        click.Option(
            ["--strategies"],
            required=True,
            metavar="A,B,C",
            help="Comma-separated strategy names to compare.",
        ),
        click.Option(
            ["--seeds"],
            type=click.IntRange(min=1),
            default=3,
            show_default=True,
            help="Seeds per strategy (0..N-1); each seed also draws its own split.",
        ),
        click.Option(
            ["--out-dir"],
            type=click.Path(file_okay=False, path_type=Path),
            help="Where runs and compare.json/.md go. Default: RUN_DIR/compare/<timestamp>.",
        ),
    ]
    return click.Command(
        "compare",
        callback=with_errors(_run),
        params=[*_shared_params(), *extra],
        help="Compare strategies on DATASET and PROMPT at the same metric-call budget "
        "(--max-calls): mean and sd of the final test score over seeds, mean calls, tokens, "
        "cost, and a paired sign-flip p-value against the best.",
    )


compare_command = _make()
