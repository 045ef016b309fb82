"""``--mlflow`` options for ``aevyra-reflex optimize`` (the ``mlflow`` plugin).

This module must stay light: the CLI loads every plugin to build ``--help``, so mlflow is only
imported (through the callback) when a run actually asks for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from reflex.api import ConfigurationError, MetricRegistrar, hookimpl
from reflex.api.tracking import parse_tag_pairs, wanted

if TYPE_CHECKING:
    from reflex.api import Callback, DatasetSourceRegistrar, Metric, PromptSourceRegistrar

__all__ = [
    "OPTIONS",
    "register_commands",
    "register_dataset_sources",
    "register_metrics",
    "register_optimize_options",
    "register_prompt_sources",
    "resolve_prompt",
    "scorer_metric",
    "tag_option",
    "to_callbacks",
]


def tag_option(flag: str, tracker: str) -> click.Option:
    """A repeatable ``KEY=VALUE`` option, checked when the command line is parsed."""

    def check(
        ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
    ) -> tuple[str, ...]:
        try:
            parse_tag_pairs(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
        return value

    return click.Option(
        [flag],
        multiple=True,
        metavar="KEY=VALUE",
        callback=check,
        help=f"Add a tag to the {tracker} run (repeatable).",
    )


OPTIONS: list[click.Option] = [
    click.Option(
        ["--mlflow"],
        is_flag=True,
        help="Log the run to MLflow (implied by any other --mlflow-* option).",
    ),
    click.Option(
        ["--mlflow-experiment"], metavar="NAME", help="MLflow experiment [default: aevyra-reflex]."
    ),
    click.Option(
        ["--mlflow-tracking-uri"],
        metavar="URI",
        help="Tracking URI [default: MLFLOW_TRACKING_URI, else sqlite:///mlflow.db in the "
        "working directory: MLflow 3's default; its file store ./mlruns is deprecated].",
    ),
    click.Option(["--mlflow-run-name"], metavar="NAME", help="MLflow run name."),
    tag_option("--mlflow-tag", "MLflow"),
    click.Option(
        ["--mlflow-log-prompts"],
        is_flag=True,
        help="Also log every iteration's prompt and reasoning as artifacts.",
    ),
    click.Option(
        ["--mlflow-trace"],
        is_flag=True,
        help="Record one MLflow trace per LiteLLM call, linked to the run.",
    ),
    click.Option(
        ["--mlflow-child-runs"],
        is_flag=True,
        help="Log one nested MLflow run per evaluated candidate under the run.",
    ),
    click.Option(
        ["--mlflow-row-traces/--no-mlflow-row-traces"],
        default=None,
        help="Log each row of the baseline and final test evaluations (and the winner's val "
        "evaluation) as an MLflow trace with its scores as assessments [default: on; turn it "
        "off for very large test splits].",
    ),
    click.Option(
        ["--mlflow-register-prompt"],
        metavar="NAME",
        help="Register the best prompt under NAME in the MLflow prompt registry.",
    ),
]


def to_callbacks(values: dict[str, Any]) -> list[Callback]:
    """The options' values -> ``[MLflowCallback(...)]``, or ``[]`` when MLflow is not asked for."""
    from reflex_mlflow.prompts import set_default_tracking_uri

    # Where a prompts:/ PROMPT of this command line is read (None: MLFLOW_TRACKING_URI's).
    set_default_tracking_uri(values["mlflow_tracking_uri"])
    if not wanted(values, "mlflow"):
        return []
    try:
        from reflex_mlflow.callback import MLflowCallback
    except ImportError as exc:
        raise ConfigurationError(
            f"--mlflow needs MLflow ({exc}): pip install 'aevyra-reflex[mlflow]'"
        ) from None
    return [
        MLflowCallback(
            run_name=values["mlflow_run_name"],
            tracking_uri=values["mlflow_tracking_uri"],
            experiment_name=values["mlflow_experiment"] or "aevyra-reflex",
            tags=parse_tag_pairs(values["mlflow_tag"]),
            log_prompt_each_iter=values["mlflow_log_prompts"],
            register_prompt=values["mlflow_register_prompt"],
            trace_llm_calls=values["mlflow_trace"],
            child_runs=values["mlflow_child_runs"],
            row_traces=values.get("mlflow_row_traces") is not False,
        )
    ]


@hookimpl
def register_optimize_options(register: Callable[..., None]) -> None:
    register(OPTIONS, to_callbacks)


def _mlflow_reader(name: str) -> Callable[[str], Sequence[Mapping[str, object]]]:
    """A dataset reader that imports MLflow (and reflex_mlflow.datasets) only when it reads."""

    def read(rest: str) -> Sequence[Mapping[str, object]]:
        try:
            from reflex_mlflow import datasets
        except ImportError as exc:
            raise ConfigurationError(
                f"a dataset from MLflow needs MLflow ({exc}): pip install 'aevyra-reflex[mlflow]'"
            ) from None
        reader: Callable[[str], Sequence[Mapping[str, object]]] = getattr(datasets, name)
        return reader(rest)

    return read


@hookimpl
def register_dataset_sources(register: DatasetSourceRegistrar) -> None:
    register("mlflow", _mlflow_reader("read_evaluation_dataset"))
    register("mlflow-traces", _mlflow_reader("read_traces"))


def resolve_prompt(uri: str) -> object:
    """A ``prompts:/`` PROMPT, read from the MLflow prompt registry (mlflow imported now)."""
    try:
        import mlflow  # noqa: F401 - the extra's check, before anything else is read

        from reflex_mlflow.prompts import load_prompt
    except ImportError as exc:
        raise ConfigurationError(
            f"{uri}: reading a registered prompt needs MLflow ({exc}): "
            "pip install 'aevyra-reflex[mlflow]'"
        ) from None
    return load_prompt(uri)


@hookimpl
def register_prompt_sources(register: PromptSourceRegistrar) -> None:
    register("prompts", resolve_prompt)


@hookimpl
def register_commands(cli: click.Group) -> None:
    from reflex_mlflow.commands import promote_command, rollback_command

    cli.add_command(promote_command)
    cli.add_command(rollback_command)


def scorer_metric(target: str = "", **options: Any) -> Metric:
    """``--metric mlflow:TARGET[,KEY=VALUE...]``: an ``mlflow.genai`` scorer as a reflex metric
    (:mod:`reflex_mlflow.scorers`)."""
    try:
        from reflex_mlflow.scorers import make_metric
    except ImportError as exc:  # pragma: no cover - the mlflow extra is missing
        raise ConfigurationError(
            f"--metric mlflow needs MLflow ({exc}): pip install 'aevyra-reflex[mlflow]'"
        ) from None
    return make_metric(target, **options)


@hookimpl
def register_metrics(register: MetricRegistrar) -> None:
    register("mlflow", scorer_metric)
