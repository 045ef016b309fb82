"""The ``optimize`` command: build the optimizer, run it with the console reporter, write files."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from reflex.cli.build import build_optimizer, positionals
from reflex.cli.common import RESUME_HINT, hidden_credentials, with_errors
from reflex.cli.options import optimize_options

__all__ = ["make_optimize"]


def _run_optimize(params: dict[str, Any], plugin_callbacks: list[Any]) -> None:
    logging.basicConfig(
        level=logging.DEBUG if params["verbose"] else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    with hidden_credentials(params.get("api_base"), params.get("reasoning_base_url")):
        _optimize(positionals(params), plugin_callbacks)


def _optimize(params: dict[str, Any], plugin_callbacks: list[Any]) -> None:
    from reflex.cli.console import ConsoleReporter, print_summary
    from reflex.optimizer import prompt_spec

    optimizer = build_optimizer(params)
    prompt = prompt_spec(params["prompt"])
    reporter = ConsoleReporter()
    resume: bool | str = params["resume_from"] or bool(params["resume"])
    result = optimizer.run(prompt, callbacks=[reporter, *plugin_callbacks], resume=resume)
    reporter.close()
    # Create missing parent folders: failing here, after a paid run, would lose the output.
    if params["output"] is not None:
        _write_best(params["output"], prompt, result)
    if params["results_json"] is not None:
        params["results_json"].parent.mkdir(parents=True, exist_ok=True)
        params["results_json"].write_text(
            json.dumps(result.to_dict(), indent=2) + "\n", encoding="utf-8"
        )
    print_summary(result)
    _print_slices(result.slices)


def _write_best(path: Path, spec: Any, result: Any) -> None:
    """The best prompt in the input's shape: a components file when the input was one."""
    from reflex.data.prompts import write_prompt_file

    path.parent.mkdir(parents=True, exist_ok=True)
    if spec.is_single or result.best_components is None:
        if not spec.is_single:
            click.echo(
                f"note: the strategy edited the assembled prompt; {path} holds it as one text",
                err=True,
            )
        path.write_text(result.best_prompt + "\n", encoding="utf-8")
        return
    write_prompt_file(path, spec.replace(result.best_components))


def _print_slices(slices: dict[str, Any]) -> None:
    def fmt(value: float | None) -> str:
        return "  n/a" if value is None else f"{value:.3f}"

    for key, groups in slices.items():
        click.echo(f"test score by {key} (baseline -> final):", err=True)
        for group, row in groups.items():
            click.echo(
                f"  {group:<20} n={row['n']:<4} {fmt(row['baseline'])} -> {fmt(row['final'])}",
                err=True,
            )


def make_optimize(registry: Any) -> click.Command:
    groups = list(registry.option_groups)

    @functools.partial(with_errors, on_interrupt=RESUME_HINT)
    def optimize(**params: Any) -> None:
        """Optimize PROMPT on DATASET (JSONL or CSV).

        PROMPT: a text file, a .json/.yaml/.toml file of named components (the reserved key
        _template assembles them) or a directory of .md components.

        Pipeline mode: --pipeline-file FILE.py runs your run(prompt, input, call) on each row
        (of DATASET or of --inputs-file, which replaces DATASET) instead of one model call.
        """
        callbacks: list[Any] = []
        for group in groups:
            names = {o.name for o in group.options}
            callbacks.extend(group.to_callbacks({k: params.pop(k) for k in names}))
        _run_optimize(params, callbacks)

    command: Any = optimize
    for group in reversed(groups):
        for option in reversed(group.options):
            command = _attach(option)(command)
    for decorator in reversed(optimize_options()):
        command = decorator(command)
    return click.command("optimize")(command)


def _attach(option: click.Parameter) -> Callable[[Any], Any]:
    def decorate(func: Any) -> Any:
        func.__click_params__ = [*getattr(func, "__click_params__", []), option]
        return func

    return decorate
