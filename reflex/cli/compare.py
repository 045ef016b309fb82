"""``aevyra-reflex compare``: each strategy x seed x dataset at one metric-call budget, as a table.

It takes ``optimize``'s dataset, model, metric, split and budget options (not the per-run
ones: strategy, output files, resume) plus ``--strategies``, ``--seeds`` and ``--dataset``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import click

from reflex.cli.args import COMPARE_FIXED, CompareArgs

__all__ = ["compare_command"]


def _shared_params() -> list[click.Parameter]:
    """optimize's params, less those that make no sense for a comparison of several runs."""
    from reflex.cli.options import optimize_params

    skipped = {*COMPARE_FIXED, "strategy"}
    return [p for p in optimize_params() if p.name not in skipped]


def _run(**params: Any) -> None:
    from reflex.cli.common import hidden_credentials, router_secrets

    args = CompareArgs.from_params(params)

    logging.basicConfig(
        level=logging.DEBUG if args.run.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    urls = (args.run.api_base, args.run.reasoning_base_url, args.run.judge_api_base)
    with hidden_credentials(*urls, values=router_secrets(args.run.router_config)):
        _compare(args)


def _compare(args: CompareArgs) -> None:
    from reflex.cli.build import build_optimizer, var_fields
    from reflex.data.dataset import load_dataset
    from reflex.data.demos import template_fields
    from reflex.grid.compare import compare
    from reflex.optimizer import prompt_spec

    spec = prompt_spec(args.run.prompt)
    fields = template_fields(spec.render(), var_fields(args.run.variables))
    inputs, outputs = args.run.input_field, args.run.output_field
    datasets = [
        load_dataset(path, input_field=inputs, output_field=outputs, variables=fields)
        for path in args.datasets
    ] or None
    comparison = compare(
        build_optimizer(args.run),
        spec,
        args.strategies,
        seeds=args.seeds,
        max_calls=args.run.max_calls,
        directory=args.out_dir,
        executor=args.executor,
        ray_address=args.ray_address,
        datasets=datasets,
    )
    click.echo(comparison.table())
    click.echo(f"saved {Path(comparison.directory) / 'compare.json'} and compare.md", err=True)


def _make() -> click.Command:
    from reflex.cli.common import with_errors
    from reflex.grid.compare import DEFAULT_SEEDS

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
            default=DEFAULT_SEEDS,
            show_default=True,
            help="Seeds per strategy (0..N-1); each seed also draws its own split.",
        ),
        click.Option(
            ["--dataset", "datasets"],
            multiple=True,
            type=click.Path(dir_okay=False, path_type=Path),
            metavar="FILE",
            help="Another dataset for the grid (repeat for several), run with the same PROMPT; "
            "DATASET may then be left out. Each dataset gets its own rows in the table: its "
            "best strategy and p-values within it.",
        ),
        click.Option(
            ["--out-dir"],
            type=click.Path(file_okay=False, path_type=Path),
            help="Where runs and compare.json/.md go. Default: RUN_DIR/compare/<timestamp>.",
        ),
        click.Option(
            ["--executor"],
            type=click.Choice(["local", "ray"]),
            default="local",
            show_default=True,
            help="Run the grid's cells one after another here, or as tasks on a Ray cluster "
            "(pip install 'aevyra-reflex[ray]').",
        ),
        click.Option(
            ["--ray-address"],
            metavar="HOST:PORT",
            help="The Ray cluster (`ray start --head` prints it); default: a new local one.",
        ),
    ]
    return click.Command(
        "compare",
        callback=with_errors(_run),
        params=[*_shared_params(), *extra],
        help="Compare strategies on DATASET (and each --dataset) with PROMPT at the same "
        "metric-call budget (--max-calls): per dataset, mean and sd of the final test score "
        "over seeds, mean calls, tokens, cost, and a paired sign-flip p-value against the best.",
    )


compare_command = _make()
