"""The ``aevyra-reflex`` command line: a thin click layer over the public API.

Library errors become one line on stderr and exit code 2 (tracebacks only with ``-v``).
``--help`` stays fast: litellm is imported only when a model is called.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import click

from reflex.cli_options import optimize_options
from reflex.errors import ConfigurationError, ReflexError
from reflex.redact import ScrubFilter

__all__ = ["build_cli", "main", "positionals"]

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C


def _registry() -> Any:
    from reflex.plugins import get_registry

    return get_registry()


def _pairs(values: tuple[str, ...], flag: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not key=value", param_hint=flag)
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


class _Interrupts:
    """SIGINT handler: the first Ctrl-C raises KeyboardInterrupt, so the run cancels its calls,
    saves its partial result and closes its trackers; a second one exits at once."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.count > 1:
            os.write(2, b"interrupted again: exiting now (the last checkpoint is kept)\n")
            os._exit(EXIT_INTERRUPTED)
        raise KeyboardInterrupt


@contextlib.contextmanager
def _handle_interrupts() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be installed from the main thread
        return
    previous = signal.signal(signal.SIGINT, _Interrupts())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


RESUME_HINT = (
    "interrupted: the checkpoint is saved; run the same command with --resume to continue "
    "(paid calls are not repeated)"
)


def _with_errors(
    func: Callable[..., None], *, on_interrupt: str = "interrupted"
) -> Callable[..., None]:
    def wrapper(*args: Any, **kwargs: Any) -> None:
        verbose = bool(kwargs.get("verbose"))
        try:
            with _handle_interrupts():
                func(*args, **kwargs)
        except ReflexError as exc:
            if verbose:
                raise
            click.echo(f"error: {exc}", err=True)
            sys.exit(EXIT_USAGE)
        except OSError as exc:  # e.g. -o / --results-json on a full or read-only disk
            if verbose:
                raise
            from reflex.store import storage_error

            click.echo(f"error: {storage_error(exc.filename or '?', exc)}", err=True)
            sys.exit(EXIT_USAGE)
        except KeyboardInterrupt:
            click.echo(on_interrupt, err=True)
            sys.exit(EXIT_INTERRUPTED)

    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    return wrapper


class _UsageLine(click.ClickException):
    """A click usage error shown as one ``error:`` line, like every other CLI error."""

    exit_code = EXIT_USAGE

    def __init__(self, exc: click.UsageError) -> None:
        where = exc.ctx.command_path if exc.ctx is not None else "aevyra-reflex"
        super().__init__(f"{exc.format_message()} (see '{where} --help')")

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class _Group(click.Group):
    """Subcommand usage errors (bad flag, bad value, missing file) become one line, exit 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _UsageLine(exc) from None


def _number(text: str, flag: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ConfigurationError(f"{flag} {text!r}: not a number (e.g. length:0.05)") from None


def positionals(p: dict[str, Any]) -> dict[str, Any]:
    """``p`` with DATASET and PROMPT checked; DATASET is left out when --inputs-file is given."""
    dataset, prompt, inputs = p["dataset"], p["prompt"], p.get("inputs_file")
    if inputs is not None and prompt is None and dataset is not None:
        dataset, prompt = None, dataset  # `optimize --inputs-file FILE PROMPT`
    if inputs is not None and dataset is not None:
        raise click.BadParameter("give DATASET or --inputs-file, not both", param_hint="DATASET")
    if dataset is None and inputs is None:
        raise click.UsageError("Missing argument 'DATASET' (or --inputs-file FILE).")
    if prompt is None:
        raise click.UsageError("Missing argument 'PROMPT'.")
    if dataset is not None and dataset.is_dir():
        raise click.BadParameter(f"File '{dataset}' is a directory.", param_hint="'DATASET'")
    return {**p, "dataset": dataset, "prompt": prompt}


def _with_data(opt: Any, p: dict[str, Any]) -> Any:
    """The rows (DATASET or --inputs-file) and, in pipeline mode, the pipeline."""
    if p.get("inputs_file") is not None:
        opt.set_inputs(p["inputs_file"])
    else:
        opt.set_dataset(p["dataset"], input_field=p["input_field"], output_field=p["output_field"])
    if p.get("pipeline_file") is not None:
        opt.set_pipeline(
            p["pipeline_file"], timeout=p["pipeline_timeout"], trace_metrics=p["trace_metrics"]
        )
    elif p.get("trace_metrics"):
        raise click.BadParameter("needs --pipeline-file FILE.py", param_hint="--score-trace")
    return opt


def _build_optimizer(p: dict[str, Any]) -> Any:
    from reflex.optimizer import PromptOptimizer

    opt = _with_data(PromptOptimizer(), p)
    for model in p["models"]:
        opt.add_provider(model, api_base=p["api_base"])
    # Without --metric: exact_match, unless a judge scores the run (then the judge alone).
    for metric in p["metrics"] or (() if p["judge"] else ("exact_match",)):
        name, _, weight = metric.partition(":")
        if name == "llm_judge":  # its model comes from --judge, never from --metric
            raise ConfigurationError(
                "--metric llm_judge needs a model: use --judge PROVIDER/MODEL "
                "(without --metric llm_judge)"
            )
        opt.add_metric(name, weight=_number(weight, "--metric") if weight else 1.0)
    for guard in p["guards"]:
        name, _, tolerance = guard.partition(":")
        opt.add_guard(name, _number(tolerance, "--guard") if tolerance else 0.0)
    if p["judge"]:
        opt.set_judge(p["judge"], criteria=p["judge_criteria"])
    elif p["judge_criteria"]:
        raise click.BadParameter("needs --judge PROVIDER/MODEL", param_hint="--judge-criteria")
    if p["slice_by"]:
        opt.set_slices(*p["slice_by"])
    opt.set_strategy(p["strategy"], **_pairs(p["strategy_options"], "--strategy-option"))
    if p["reasoning_model"]:
        opt.set_reasoning_model(p["reasoning_model"], base_url=p["reasoning_base_url"])
    if p["source_model"]:
        opt.set_source_model(p["source_model"])
    for name, path in _pairs(p["reasoning_templates"], "--reasoning-template").items():
        opt.set_reasoning_template(name, Path(str(path)))
    opt.set_splits(p["train_split"], p["val_split"], group_key=p["group_key"])
    opt.set_budget(
        max_calls=p["max_calls"],
        max_reasoning_calls=p["max_reasoning_calls"],
        max_cost=p["max_cost"],
        max_seconds=p["max_seconds"],
    )
    return opt.configure(
        max_iterations=p["max_iterations"],
        score_threshold=p["threshold"],
        seed=p["seed"],
        batch_size=p["batch_size"],
        early_stopping_patience=p["early_stopping_patience"],
        max_workers=p["max_workers"],
        client_processes=p["client_processes"],
        temperature=p["temperature"],
        max_tokens=p["max_tokens"],
        run_dir=p["run_dir"],
        allow_degenerate_seed=p["allow_degenerate_seed"],
        strict_leakage=p["strict_leakage"],
        cache_namespace=p["cache_namespace"],
    )


def _run_optimize(params: dict[str, Any], plugin_callbacks: list[Any]) -> None:
    from reflex.optimizer import prompt_spec
    from reflex.report import ConsoleReporter, print_summary

    logging.basicConfig(
        level=logging.DEBUG if params["verbose"] else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    urls = (params.get("api_base"), params.get("reasoning_base_url"))
    for handler in logging.getLogger().handlers:  # LiteLLM's DEBUG lines echo the URL
        handler.addFilter(ScrubFilter(*urls))
    params = positionals(params)
    optimizer = _build_optimizer(params)
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
    from reflex.prompts import write_prompt_file

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


def _make_optimize(registry: Any) -> click.Command:
    groups = list(registry.option_groups)

    @functools.partial(_with_errors, on_interrupt=RESUME_HINT)
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


def _plugins_command() -> click.Command:
    @click.command("plugins")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    def plugins(as_json: bool) -> None:
        """List the loaded plugins and what each registers."""
        infos = _registry().plugins()
        if as_json:
            click.echo(json.dumps([info.to_dict() for info in infos], indent=2))
            return
        for info in infos:
            where = f"{info.distribution} {info.version}" if info.distribution else "in-process"
            parts = [
                f"strategies: {', '.join(info.strategies)}" if info.strategies else "",
                f"metrics: {', '.join(info.metrics)}" if info.metrics else "",
                f"options: {', '.join(info.options)}" if info.options else "",
                "commands" if info.commands else "",
            ]
            click.echo(f"{info.name} ({where})  " + "; ".join(p for p in parts if p))

    return plugins


def build_cli() -> click.Group:
    """The click group with built-in commands plus whatever plugins add."""
    from reflex import __version__

    @click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(__version__, prog_name="aevyra-reflex")
    def cli() -> None:
        """aevyra-reflex: measure a prompt, improve it, and prove the gain on held-out data."""

    try:
        registry = _registry()
    except ReflexError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    cli.add_command(_make_optimize(registry))
    cli.add_command(_plugins_command())
    from reflex.cli_runs import runs_command, show_command

    cli.add_command(runs_command)
    cli.add_command(show_command)
    from reflex.cli_compare import compare_command

    cli.add_command(compare_command)
    from reflex.cli_report import add_record_commands

    add_record_commands(cli)
    registry.pm.hook.register_commands(cli=cli)
    return cli


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    build_cli().main(args=argv, prog_name="aevyra-reflex")
