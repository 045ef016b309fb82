"""The ``optimize`` command: build the optimizer, run it with the console reporter, write files."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from reflex.cli.args import OptimizeArgs
from reflex.cli.build import build_optimizer
from reflex.cli.common import RESUME_HINT, hidden_credentials, router_secrets, with_errors
from reflex.cli.options import optimize_params
from reflex.cli.outputs import refuse_clobbering
from reflex.data.files import atomic_write_text

if TYPE_CHECKING:
    from rich.console import Console

    from reflex.callbacks import Callback
    from reflex.data.prompts import PromptSpec
    from reflex.optimizer import PromptOptimizer
    from reflex.plugins import Registry
    from reflex.result import OptimizationResult

__all__ = ["make_optimize", "print_trackers"]


def _run_optimize(args: OptimizeArgs, plugin_callbacks: list[Callback]) -> None:
    from rich.console import Console

    from reflex.cli.console import log_to_console

    console = Console(stderr=True)  # progress and log records share it: no log on a live bar
    urls = (args.api_base, args.reasoning_base_url, args.judge_api_base)
    routed = router_secrets(args.router_config)
    with log_to_console(console, verbose=args.verbose), hidden_credentials(*urls, values=routed):
        _optimize(args, plugin_callbacks, console)


def _optimize(args: OptimizeArgs, plugin_callbacks: list[Callback], console: Console) -> None:
    from reflex.checks.outcome import exit_code
    from reflex.cli.console import ConsoleReporter, print_summary
    from reflex.optimizer import prompt_spec

    if args.as_json and not args.dry_run:
        raise click.BadParameter("prints the --dry-run plan: give --dry-run", param_hint="--json")
    if args.dry_run:
        _dry_run(args)
        return
    refuse_clobbering({"-o": args.output, "--results-json": args.results_json}, _inputs(args))
    optimizer = build_optimizer(args)
    prompt = prompt_spec(args.prompt)
    reporter = ConsoleReporter(console)
    callbacks = [reporter, *plugin_callbacks]
    try:
        result = optimizer.run(prompt, callbacks=callbacks, resume=args.resume_target)
    finally:
        reporter.close()
        print_trackers(plugin_callbacks)
    # Create missing parent folders: failing here, after a paid run, would lose the output.
    if args.output is not None:
        _save(args.output, prompt, optimizer, result)
    if args.results_json is not None:
        atomic_write_text(args.results_json, json.dumps(result.to_dict(), indent=2) + "\n")
    print_summary(result)
    _print_slices(result.slices)
    code = exit_code(result.end_state)
    if code:  # 3: paused on a budget (honest final score); 4: no usable candidate
        sys.exit(code)


def _dry_run(args: OptimizeArgs) -> None:
    """``--dry-run``: the checks a run makes before its first call, then its plan on stdout (as
    JSON with ``--json``); no call, no run folder, no -o or --results-json written."""
    from reflex.optimizer import prompt_spec

    if args.resume_target:
        raise click.BadParameter(
            "a dry run plans a new run; leave --resume/--resume-from out", param_hint="--dry-run"
        )
    plan = build_optimizer(args).plan(prompt_spec(args.prompt))
    if args.as_json:
        click.echo(json.dumps(plan.to_dict(), indent=2))
    else:
        click.echo("\n".join(plan.lines()))


def _inputs(args: OptimizeArgs) -> dict[str, Path | str | None]:
    """Every file ``optimize`` reads that an output path could name."""
    inputs: dict[str, Path | str | None] = {
        "dataset": args.dataset,
        "prompt": args.prompt,
        "inputs file": args.inputs_file,
        "pipeline file": args.pipeline_file,
        "judge criteria": args.judge_criteria,
    }
    for item in args.reasoning_templates:
        name, _, path = item.partition("=")
        inputs[f"reasoning template {name}"] = path
    return inputs


def print_trackers(callbacks: list[Callback]) -> None:
    """Where each tracker put the run (a tracker callback's optional ``where()`` lines)."""
    for callback in callbacks:
        where = getattr(callback, "where", None)
        try:
            lines = list(where()) if callable(where) else []
        except Exception:  # noqa: BLE001 - a tracker must never break the command
            lines = []
        for line in lines:
            click.echo(str(line), err=True)


def _save(
    path: Path, prompt: PromptSpec, optimizer: PromptOptimizer, result: OptimizationResult
) -> None:
    """``-o``: the best prompt in the input's shape, and with optimized tool descriptions the
    tools file next to it (:func:`_write_tools`)."""
    from reflex.data.prompts import with_tool_descriptions

    tools = optimizer.tool_descriptions_target()
    spec = with_tool_descriptions(prompt, tools) if tools else prompt
    _write_best(path, spec, result)
    _write_tools(path, spec, result.best_prompt, tools)


def _write_tools(
    path: Path, spec: PromptSpec, prompt: str, tools: Sequence[Mapping[str, Any]]
) -> None:
    """``NAME.tools.json`` next to ``path``: the tools with the best prompt's descriptions (its
    ``<tools>`` section, ``--optimize-tool-descriptions``), to send as the request's ``tools``."""
    from reflex.data.tool_text import described_tools

    described = described_tools(tools, prompt) if tools else None
    if described is None:
        return
    tools_path = path.with_name(f"{path.stem}.tools.json")
    atomic_write_text(tools_path, json.dumps(described, indent=2, ensure_ascii=False) + "\n")
    where = (
        f"the template in {path} holds no tool descriptions"
        if spec.fmt == "chat"
        else f"{path} starts with the <tools> section the run scored (check --prompt {path} "
        "scores it the same way; reflex.prompt_messages leaves it out of the messages)"
    )
    click.echo(f"note: {where}; send the tools in {tools_path} with the prompt", err=True)


_COMPONENT_FILES = ("json", "yaml", "toml", "dir")  # prompt formats read back as components


def _write_best(path: Path, spec: PromptSpec, result: OptimizationResult) -> None:
    """The best prompt in the input's shape: a components file when the input was one."""
    from reflex.data.demos import saved_template, split_chat_demos
    from reflex.data.prompts import SINGLE, PromptSpec, write_prompt_file

    path.parent.mkdir(parents=True, exist_ok=True)
    demos = len(split_chat_demos(result.best_prompt)[1])
    template = saved_template(result.best_prompt) if spec.fmt == "chat" else None
    if template is not None:  # the template form, placeholders kept (demos as fixed turns)
        atomic_write_text(path, json.dumps(template, indent=2, ensure_ascii=False) + "\n")
        return
    if demos:
        click.echo(
            f"note: {path} ends with {demos} examples sent as chat turns (a user and an assistant "
            "message each, after the system message); reflex.prompt_messages(prompt, input) "
            "builds the messages its score was measured with",
            err=True,
        )
    if spec.is_single:
        atomic_write_text(path, result.best_prompt + "\n")
        return
    if result.best_components is None:  # one text, kept in the input's format so it reads back
        as_file = spec.fmt in _COMPONENT_FILES
        held = f"one component, {SINGLE!r}" if as_file else "one text"
        click.echo(
            f"note: the strategy edited the assembled prompt; {path} holds it as {held}", err=True
        )
        if as_file:
            write_prompt_file(path, PromptSpec({SINGLE: result.best_prompt}, None, spec.fmt))
        else:
            atomic_write_text(path, result.best_prompt + "\n")
        return
    write_prompt_file(path, spec.replace(result.best_components))


def _print_slices(slices: Mapping[str, Mapping[str, Mapping[str, float | None]]]) -> None:
    def fmt(value: float | None) -> str:
        return "  n/a" if value is None else f"{value:.3f}"

    for key, groups in slices.items():
        click.echo(f"test score by {key} (baseline -> final):", err=True)
        for group, row in groups.items():
            click.echo(
                f"  {group:<20} n={row['n']:<4} {fmt(row['baseline'])} -> {fmt(row['final'])}",
                err=True,
            )


def make_optimize(registry: Registry) -> click.Command:
    """``optimize`` with its own options, then every plugin's (in registration order)."""
    groups = list(registry.option_groups)

    def optimize(**params: Any) -> None:
        """Optimize PROMPT on DATASET (JSONL or CSV).

        DATASET may also be a source a plugin reads: mlflow:NAME (an MLflow evaluation
        dataset), mlflow-traces:EXPERIMENT?filter=... (traces with expectations).

        PROMPT: a text file, a .json/.yaml/.toml file of named components (the reserved key
        _template assembles them), a directory of .md components, a chat template (.json list),
        or an MLflow registry URI: prompts:/NAME/VERSION or prompts:/NAME@ALIAS (read with
        --mlflow-tracking-uri, else MLFLOW_TRACKING_URI).

        Pipeline mode: --pipeline-file FILE.py runs your run(prompt, input, call) on each row
        (of DATASET or of --inputs-file, which replaces DATASET) instead of one model call.

        Exit codes: 0 succeeded; 3 paused on a budget (the final test score is measured, inside
        the room reserved for it); 4 no usable candidate (every iteration failed; the final
        score is the initial prompt's); 2 usage or configuration error, or a run that could not
        finish (e.g. a budget too small for the baseline); 130 interrupted (Ctrl-C).
        """
        # click's params are untyped: each plugin takes its options, OptimizeArgs the rest.
        callbacks: list[Callback] = []
        for group in groups:
            names = {o.name for o in group.options}
            callbacks.extend(group.to_callbacks({k: params.pop(k) for k in names}))
        _run_optimize(OptimizeArgs.from_params(params), callbacks)

    plugin_params = [option for group in groups for option in group.options]
    return click.Command(
        "optimize",
        callback=with_errors(optimize, on_interrupt=RESUME_HINT),
        params=[*optimize_params(), *plugin_params],
        help=optimize.__doc__,
    )
