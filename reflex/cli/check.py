"""``aevyra-reflex check``: a CI gate. Exit 0 no regression, 1 regression, 2 usage/config error."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from reflex.cli.args import checked_params
from reflex.cli.common import FiniteRange, InputFile
from reflex.cli.options import judge_api_base_option
from reflex.cli.runs import RUN_DIR

if TYPE_CHECKING:
    from reflex.config import RunConfig
    from reflex.types import Metric

__all__ = ["CheckArgs", "check_command", "judge_options"]

EXIT_REGRESSION = 1
F = TypeVar("F", bound=Callable[..., object])


@dataclass(frozen=True)
class CheckArgs:
    """Every ``check`` option, typed (click's params are converted once, in check_command)."""

    prompt_path: Path
    dataset_path: Path
    models: tuple[str, ...]
    baseline: str
    split: str | None
    tolerance: float
    metrics: tuple[str, ...]
    judge: str | None
    judge_criteria: Path | None
    judge_api_base: str | None
    input_field: str | None
    output_field: str | None
    api_base: str | None
    cache: Path | None
    tools_file: Path | None
    tool_choice: str | None
    response_format_file: Path | None
    variables: tuple[str, ...]
    run_dir: str
    as_json: bool
    verbose: bool

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> CheckArgs:
        return cls(**checked_params(cls, params, "check"))


def judge_options(command: F) -> F:
    """``--judge`` / ``--judge-criteria``: the judge of a record that does not store its own;
    ``--judge-api-base`` (optimize's own option): where every judge's calls go."""
    command = judge_api_base_option(command)
    command = click.option(
        "--judge-criteria",
        type=InputFile("judge criteria file"),
        help="Rubric of --judge: a JSON criteria file or a plain-text rubric.",
    )(command)
    return click.option(
        "--judge",
        metavar="PROVIDER/MODEL",
        help="LLM judge, for records made before config.json stored theirs (metric_specs).",
    )(command)


def request_options(command: F) -> F:
    """``--tools`` / ``--tool-choice`` / ``--response-format`` / ``--var``: what each request
    carries, for a score baseline (a record baseline carries its own; given, they must match)."""
    command = click.option(
        "--var",
        "variables",
        multiple=True,
        metavar="NAME=FIELD",
        help="Chat template: fill {{NAME}} from the row field FIELD [record: the record's].",
    )(command)
    command = click.option(
        "--response-format",
        "response_format_file",
        type=InputFile("response format file"),
        metavar="FILE",
        help="JSON response format sent with every request [record: the record's].",
    )(command)
    command = click.option(
        "--tool-choice",
        metavar="auto|required|none|NAME",
        help="The tool choice sent with every request [record: the record's].",
    )(command)
    return click.option(
        "--tools",
        "tools_file",
        type=InputFile("tools file"),
        metavar="FILE",
        help="JSON list of function schemas offered with every request [record: the record's].",
    )(command)


@click.command("check")
@click.option(
    "--prompt",
    "prompt_path",
    required=True,
    type=InputFile("prompt file", dir_okay=True),
    help="The prompt to check (text file, components file or folder).",
)
@click.option(
    "--dataset",
    "dataset_path",
    required=True,
    type=InputFile("dataset file", sources=True),
    help="JSONL or CSV rows, or a dataset source (mlflow:NAME) (for a record baseline: the "
    "run's dataset).",
)
@click.option(
    "-m", "--model", "models", multiple=True, help="Task model(s); default: the record's."
)
@click.option(
    "--baseline",
    required=True,
    help="A score in [0, 1], or a run record: run id, run folder or result.json.",
)
@click.option(
    "--split",
    type=click.Choice(["train", "val", "test"]),
    default=None,
    help="Rows to score [record: test; score: the whole dataset, or its rows with this split].",
)
@click.option(
    "--tolerance",
    type=FiniteRange(min=0.0),
    default=0.0,
    show_default=True,
    help="Allowed drop below the baseline.",
)
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    help="name[:weight]; default: the record's metrics, else exact_match.",
)
@judge_options
@click.option("--input-field", default=None, help="Name of the input field.")
@click.option("--output-field", default=None, help="Name of the reference field.")
@click.option(
    "--api-base",
    default=None,
    help="Base URL of the task model's endpoint [record: the record's, for its models].",
)
@click.option(
    "--cache",
    type=InputFile("response cache", exists=False),
    default=None,
    help="A response cache file to use (e.g. .reflex/cache.sqlite).",
)
@request_options
@RUN_DIR
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("-v", "--verbose", is_flag=True, help="Tracebacks for errors.")
def check_command(**params: Any) -> None:
    """Score --prompt and fail (exit 1) if it regresses below --baseline beyond --tolerance.

    Exit codes: 0 no regression, 1 regression (or a row errored), 2 usage or configuration error.
    """
    from reflex.cli.common import hidden_credentials, with_errors

    args = CheckArgs.from_params(params)
    with hidden_credentials(args.api_base, args.judge_api_base):
        with_errors(_check)(args)


def _metric_list(
    args: CheckArgs, config: Mapping[str, Any] | None, judges: Sequence[Metric]
) -> dict[str, float]:
    from reflex.errors import ConfigurationError

    wanted: dict[str, float] = {}
    for item in args.metrics:
        name, _, weight = item.partition(":")
        try:
            wanted[name] = float(weight) if weight else 1.0
        except ValueError:
            raise ConfigurationError(f"--metric {item!r}: weight is not a number") from None
    if config is None:
        return {**wanted, **{j.name: 1.0 for j in judges}} or {"exact_match": 1.0}
    recorded = {m: float(config.get("metric_weights", {}).get(m, 1.0)) for m in config["metrics"]}
    if wanted and wanted != recorded:
        raise ConfigurationError(
            f"--metric {sorted(wanted)} differs from the record's metrics {recorded}: the "
            "scores would not be comparable (drop --metric, or pass a score as --baseline)"
        )
    return recorded


def _run_config(
    args: CheckArgs, config: Mapping[str, Any] | None, judges: Sequence[Metric]
) -> RunConfig:
    from pydantic import ValidationError

    from reflex.config import RunConfig
    from reflex.errors import ConfigurationError
    from reflex.optimizer import validation_message

    weights = _metric_list(args, config, judges)
    models = list(args.models) or list((config or {}).get("models", []))
    if not models:
        raise ConfigurationError("no task model: pass -m PROVIDER/MODEL")
    if config is not None and models != config.get("models"):
        click.echo(f"note: checking with {models}; the record used {config['models']}", err=True)
    kept = (
        "temperature",
        "max_tokens",
        "seed",
        "prompt_mode",
        "cache_namespace",
        "max_workers",
        "max_response_mb",
        "metric_specs",
        "variables",
        "tools",  # what each request offered and asked for: the same calls, the same cache keys
        "tool_choice",
        "response_format",
    )
    settings = {k: config[k] for k in kept if config is not None and k in config}
    settings.update(_request_settings(args, config))
    try:
        return RunConfig(
            models=models,
            metrics=list(weights),
            metric_weights=weights,
            api_base=_api_base(args, config, models),
            **settings,
        )
    except ValidationError as exc:
        raise ConfigurationError(validation_message(exc)) from None


def _request_settings(args: CheckArgs, config: Mapping[str, Any] | None) -> dict[str, Any]:
    """``--tools`` / ``--tool-choice`` / ``--response-format`` / ``--var`` as settings; against a
    record each must equal what the record's requests carried (else the scores differ)."""
    from reflex.cli.build import var_fields
    from reflex.data.tool_schemas import (
        check_tool_choice,
        response_format_setting,
        tools_setting,
    )
    from reflex.errors import ConfigurationError

    given: dict[str, tuple[str, Any]] = {}
    tools = None if args.tools_file is None else tools_setting(args.tools_file, "--tools")
    if tools is not None:
        given["tools"] = ("--tools", tools)
    if args.tool_choice is not None:
        given["tool_choice"] = (
            "--tool-choice",
            check_tool_choice(args.tool_choice, tools, "--tool-choice"),
        )
    if args.response_format_file is not None:
        fmt = response_format_setting(args.response_format_file, "--response-format")
        given["response_format"] = ("--response-format", fmt)
    if args.variables:
        given["variables"] = ("--var", var_fields(args.variables))
    for key, (flag, value) in given.items():
        if config is not None and value != (config.get(key) or None):
            raise ConfigurationError(
                f"{flag} differs from what the record's requests carried: the scores would not "
                "be comparable (drop it, or pass a score as --baseline)"
            )
    return {key: value for key, (_, value) in given.items()}


def _api_base(args: CheckArgs, config: Mapping[str, Any] | None, models: list[str]) -> str | None:
    """``--api-base``, else the record's own when its models are checked (its task model may be
    self-hosted: the provider's default host would be the wrong one)."""
    from reflex.errors import ConfigurationError
    from reflex.redact import REDACTED

    if args.api_base is not None or config is None or models != config.get("models"):
        return args.api_base
    stored = config.get("api_base")
    if stored and REDACTED in str(stored):
        raise ConfigurationError(
            "the record's --api-base held credentials and was stored redacted: pass --api-base URL"
        )
    return str(stored) if stored else None


def _check(args: CheckArgs) -> None:
    from reflex.data.dataset import load_dataset
    from reflex.data.demos import template_fields
    from reflex.optimizer import prompt_spec
    from reflex.run.gate import (
        compare,
        evaluate_prompt,
        load_baseline,
        point_judges,
        rebuild_metrics,
        rows_for,
        supplied_judge,
    )

    judges = supplied_judge(args.judge, args.judge_criteria)
    baseline = load_baseline(args.baseline, args.split, args.run_dir)
    config = _run_config(args, baseline.config, judges)
    metrics = point_judges(rebuild_metrics(config, judges, baseline.source), args.judge_api_base)
    prompt = prompt_spec(args.prompt_path).render()
    dataset = load_dataset(
        args.dataset_path,
        input_field=args.input_field,
        output_field=args.output_field,
        variables=template_fields(prompt, config.variables),
    )
    rows = rows_for(dataset, baseline)
    snapshot = evaluate_prompt(prompt, rows, config, metrics, cache=args.cache)
    outcome = compare(baseline, snapshot, args.tolerance, rows)
    if args.as_json:
        click.echo(
            json.dumps(
                {
                    "baseline": baseline.score,
                    "baseline_source": baseline.source,
                    "current": snapshot.mean_score,
                    "change": outcome.delta,
                    "tolerance": outcome.tolerance,
                    "scores_by_metric": snapshot.scores_by_metric,
                    "rows": len(snapshot.samples),
                    "errors": snapshot.n_errors,
                    "paired_test": outcome.test.to_dict() if outcome.test else None,
                    "label_check": outcome.label_check,
                    "regressed": outcome.regressed,
                },
                indent=2,
            )
        )
    else:
        for line in outcome.lines():
            click.echo(line)
    if outcome.regressed:
        sys.exit(EXIT_REGRESSION)
