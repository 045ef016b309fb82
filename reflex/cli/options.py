"""The ``optimize`` arguments and options, in groups (``compare`` reuses them).

Each name here is a field of :class:`reflex.cli.args.OptimizeArgs`, which the command's
params become. An option for a run setting is made by :func:`setting`: its default (shown by
``--help``) and its help are the :class:`reflex.config.RunConfig` field's, never written here;
only what is command-line syntax (a repeated option's ``NAME=VALUE`` form, another flag) is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from reflex.cli.common import FiniteFloat, FiniteRange, InputFile, OutputFile, RunDir
from reflex.config import BaseRunConfig, BudgetConfig
from reflex.run.presets import PRESET_CANDIDATES, PRESETS

__all__ = [
    "DEFAULT_METRIC",
    "judge_api_base",
    "judge_api_base_option",
    "optimize_params",
    "setting",
    "setting_option",
]

o = click.Option
F = TypeVar("F", bound=Callable[..., object])
# The metric of a run that names none (and has no --judge); reflex.cli.build applies it.
DEFAULT_METRIC = "exact_match"
# What the help of every repeated option made by setting() ends with.
REPEAT = "Repeat for several."


def setting(
    *decls: str, field: str | None = None, note: str | None = None, **kwargs: Any
) -> click.Option:
    """An option for the run setting its name gives (``--max-workers``: ``max_workers``, or
    the identifier among ``decls``; ``field``: a RunConfig field named otherwise, or a budget's):
    the default is the field's, shown by --help, and so is the help text when the field has a
    description and ``help`` is not given; ``note`` follows it (what only the CLI says, e.g. the
    other flags it works with, a repeated option's syntax), and a repeated option's help ends
    with :data:`REPEAT`. A repeated option holds the raw text the builder step parses, so its
    default is click's empty tuple (the field's default applies when none is given)."""
    name = next((d for d in decls if d.isidentifier()), None)
    name = field or name or next(d for d in decls if d.startswith("--"))[2:].replace("-", "_")
    known = BaseRunConfig.model_fields.get(name) or BudgetConfig.model_fields[name]
    repeated = kwargs.get("multiple", False)
    text = " ".join(t for t in (known.description, note, REPEAT if repeated else None) if t)
    kwargs.setdefault("help", text or None)
    if repeated:
        return o(list(decls), **kwargs)
    value = kwargs.pop("default", known.get_default(call_default_factory=True))
    flag = kwargs.get("is_flag", False)
    return o(list(decls), default=value, show_default=value is not None and not flag, **kwargs)


def judge_api_base() -> click.Option:
    """``--judge-api-base``: one definition for every command that calls a judge (optimize,
    compare, check, judge-check); its credentials are hidden like ``--api-base``'s."""
    return o(["--judge-api-base"], help="API base URL for the judge model.")


def _with(command: F, param: click.Parameter) -> F:
    params: list[click.Parameter] = getattr(command, "__click_params__", [])
    params.append(param)  # click reverses this list: decorators apply bottom-up
    setattr(command, "__click_params__", params)  # noqa: B010  (click's own attribute)
    return command


def judge_api_base_option(command: F) -> F:
    """Decorator form of :func:`judge_api_base` for ``@click.command`` functions."""
    return _with(command, judge_api_base())


def setting_option(*decls: str, **kwargs: Any) -> Callable[[F], F]:
    """Decorator form of :func:`setting` for ``@click.command`` functions."""
    return lambda command: _with(command, setting(*decls, **kwargs))


def _inputs() -> list[click.Parameter]:
    """The data, the prompt and the task model(s)."""
    return [
        # DATASET may be left out when --inputs-file gives the rows (see reflex.cli.args).
        click.Argument(
            ["dataset"], required=False, metavar="[DATASET]", type=click.Path(path_type=Path)
        ),
        # PROMPT may be a registry URI (prompts:/cat@production): a path that does not exist,
        # which reflex.run.prompt_sources.prompt_spec reads through its plugin.
        click.Argument(
            ["prompt"], required=False, metavar="PROMPT", type=click.Path(path_type=Path)
        ),
        setting("-m", "--model", "models", multiple=True, required=True),
        setting("--api-base"),
        setting("--temperature", type=FiniteFloat()),
        setting("--max-tokens", type=int),
        o(
            ["--tools", "tools_file"],
            type=InputFile("tools file"),
            metavar="FILE",
            help="JSON list of OpenAI function schemas offered with every request (a row's "
            "own tools replace them).",
        ),
        setting("--tool-choice", metavar="auto|required|none|NAME"),
        o(
            ["--response-format", "response_format_file"],
            type=InputFile("response format file"),
            metavar="FILE",
            help='JSON response format: {"type": "json_object"}, or {"type": "json_schema", '
            '"json_schema": {"name": ..., "schema": {...}}} (a bare JSON Schema too).',
        ),
        setting("--optimize-tool-descriptions", is_flag=True),
        setting("--format-guard/--no-format-guard", "format_guard"),
        setting("--max-prompt-tokens", type=click.IntRange(min=1), metavar="N"),
        setting("--prompt-token-cost", type=click.FloatRange(min=0.0), metavar="SCORE"),
        o(["--input-field"], help="Dataset field holding the input."),
        o(["--output-field"], help="Dataset field holding the reference answer."),
        setting(
            "--var",
            "variables",
            multiple=True,
            metavar="NAME=FIELD",
            note="NAME=FIELD fills {{NAME}} from the row field FIELD.",
        ),
        setting("--rewrite-messages", multiple=True, metavar="NAME"),
    ]


def _pipeline() -> list[click.Parameter]:
    """Pipeline mode: your Python function runs each example (see reflex.data.pipeline)."""
    return [
        o(
            ["--pipeline-file"],
            metavar="FILE.py[:NAME]",
            help="Run each example through run(prompt, input, call) defined in FILE.py (or the "
            "function NAME) instead of one task-model call; call() reaches the task model(s).",
        ),
        o(
            ["--inputs-file"],
            type=InputFile("inputs file"),
            help="Rows to run, instead of DATASET: a JSON array or JSONL of input strings or "
            "{input, ideal (optional)} objects.",
        ),
        setting("--pipeline-timeout", type=FiniteFloat()),
        setting("--score-trace", "trace_metrics", multiple=True, metavar="METRIC"),
    ]


def _scoring() -> list[click.Parameter]:
    """How outputs are scored."""
    return [
        # Command-line syntax only: reflex.cli.build parses NAME:WEIGHT,KEY=VALUE into the
        # metrics, metric_weights and metric_specs fields (and applies DEFAULT_METRIC).
        o(
            ["--metric", "metrics"],
            multiple=True,
            help="Metric name, optionally NAME:WEIGHT (0 = report only) and the metric's options "
            "as ,KEY=VALUE (e.g. length:0,max_words=50); NAME:TARGET[:WEIGHT] names what a "
            "metric family scores with (mlflow:Correctness: an MLflow scorer); repeat for several "
            f"(see `aevyra-reflex plugins`). Default: {DEFAULT_METRIC}, or none when --judge is "
            "given.",
        ),
        o(["--judge"], metavar="PROVIDER/MODEL", help="Also score with this LLM judge."),
        judge_api_base(),
        o(
            ["--judge-criteria"],
            type=InputFile("judge criteria file"),
            help="Judge rubric: a JSON criteria file or a plain-text rubric.",
        ),
        setting(
            "--guard",
            "guards",
            multiple=True,
            metavar="METRIC[:TOL]",
            note="TOL is 0 by default; add the metric with --metric METRIC:0 to report it "
            "without optimizing it.",
        ),
        setting("--strict-leakage", is_flag=True),
        setting("--overfit-gap", type=FiniteRange(0.0, 1.0)),
        setting("--slice-by", "slice_by", multiple=True, metavar="KEY"),
    ]


def _strategy() -> list[click.Parameter]:
    """How the prompt is improved."""
    return [
        # No default on the command line: -s left out is RunConfig's "" (none named), which
        # follows --reasoning-model (set_strategy(None) keeps it so).
        setting("-s", "--strategy", default=None),
        setting("--strategy-option", "strategy_options", multiple=True, metavar="KEY=VALUE"),
        setting("--reasoning-model"),
        setting("--reasoning-base-url"),
        setting("--source-model", metavar="PROVIDER/MODEL"),
        setting("--feedback-field", metavar="NAME"),
        setting(
            "--reasoning-template",
            "reasoning_templates",
            multiple=True,
            metavar="NAME=FILE",
            note="NAME=FILE: the template NAME with the text of FILE.",
        ),
        setting("--max-iterations", type=int, note="The budget: --max-calls or --budget."),
        setting("--threshold", field="score_threshold", type=FiniteFloat()),
        setting("--batch-size", type=int),
        setting("--early-stopping-patience", type=int),
        setting("--accept", metavar="RULE"),
        setting("--race/--no-race", "race"),
        setting("--allow-degenerate-seed", is_flag=True),
    ]


def _run() -> list[click.Parameter]:
    """Splits, concurrency, budgets, the run directory and resuming."""
    return [
        setting("--train-split", type=FiniteFloat()),
        setting(
            "--val-split",
            "--val-ratio",
            "val_split",
            type=FiniteFloat(),
            note="--val-ratio is the same option.",
        ),
        setting("--group-key"),
        setting("--seed", type=int),
        *_calls(),
        *_budgets(),
        setting("--cache-namespace"),
        setting("--cache-url", metavar="URL"),
        setting("--router-config", type=InputFile("router config"), metavar="LITELLM.YAML"),
        setting("--run-dir", type=RunDir()),
        setting("--shared-run-dir", is_flag=True),
        o(
            ["--resume"],
            is_flag=True,
            help="Continue the latest unfinished run for this dataset and prompt.",
        ),
        o(["--resume-from"], metavar="RUN_ID", help="Continue this unfinished run."),
    ]


def _calls() -> list[click.Parameter]:
    """How calls are made: concurrency, client processes, the embedded model's contexts and the
    size of an answer."""
    return [
        setting("--max-workers", type=int),
        setting("--client-processes", type=click.IntRange(0, 64)),
        setting("--local-workers", type=click.IntRange(0, 256)),
        setting("--local-batch", type=click.IntRange(0, 64)),
        setting("--max-response-mb", type=FiniteRange(0.0, min_open=True), metavar="MB"),
    ]


def _budgets() -> list[click.Parameter]:
    """The budgets (each keeps room for the final test evaluation) and the price table."""
    return [
        setting("--max-calls", type=int),
        setting(
            "--budget",
            "preset",
            type=click.Choice(PRESETS),
            note="Candidates a phase: "
            + ", ".join(f"{k}: {v}" for k, v in PRESET_CANDIDATES.items())
            + "; an explicit --max-calls wins.",
        ),
        setting("--max-reasoning-calls", type=int),
        setting("--max-total-calls", type=int),
        setting(
            "--max-cost",
            type=FiniteFloat(),
            note="Calls LiteLLM cannot price count only with --price.",
        ),
        setting(
            "--price",
            "prices",
            multiple=True,
            metavar="MODEL=IN:OUT",
            note="MODEL=IN:OUT, e.g. openai/my-vllm=0.2:0.6.",
        ),
        setting("--max-seconds", type=FiniteFloat()),
        setting(
            "--retry-window",
            type=FiniteRange(0.0, min_open=True),
            metavar="SECONDS",
            note="Under --max-seconds no retry waits past the deadline.",
        ),
    ]


def _output() -> list[click.Parameter]:
    """What is written and printed."""
    return [
        o(
            ["-o", "--output"],
            type=OutputFile(),
            help="Write the best prompt (the one whose test score is reported) here.",
        ),
        o(
            ["--results-json"],
            type=OutputFile(),
            help="Write the full result as JSON here.",
        ),
        o(
            ["--dry-run"],
            is_flag=True,
            help="Check everything a run checks before its first call, then print the plan "
            "(rows, calls, tokens, cost and time of each phase, the smallest gain the test "
            "split can show) and exit: no model is called, nothing is written.",
        ),
        o(["--json", "as_json"], is_flag=True, help="With --dry-run: print the plan as JSON."),
        o(["-v", "--verbose"], is_flag=True, help="Debug logging and full tracebacks."),
    ]


def optimize_params() -> list[click.Parameter]:
    """Every ``optimize`` argument and option, in the order ``--help`` shows them."""
    return [*_inputs(), *_pipeline(), *_scoring(), *_strategy(), *_run(), *_output()]
