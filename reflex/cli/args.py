"""``optimize``'s and ``compare``'s arguments, typed: click's params are converted here, once.

Past :meth:`OptimizeArgs.from_params` nothing reads click's ``dict``; every command takes its
typed object (``check`` and ``export`` define theirs beside their commands).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

import click

from reflex.config import BudgetPreset

__all__ = ["CompareArgs", "OptimizeArgs", "checked_params"]


def checked_params(cls: type, params: Mapping[str, Any], command: str) -> dict[str, Any]:
    """``params`` when they are exactly ``cls``'s fields: an option without a field (or a field
    without an option) is a bug, and is reported instead of being dropped silently."""
    names = {f.name for f in fields(cls)}
    if set(params) != names:
        extra, missing = sorted(set(params) - names), sorted(names - set(params))
        raise TypeError(f"{command}: options without a field {extra}, fields without one {missing}")
    return dict(params)


def _positionals(
    dataset: Path | None, prompt: Path | None, inputs: Path | None
) -> tuple[Path | None, Path]:
    """DATASET and PROMPT checked; DATASET is None when --inputs-file gives the rows."""
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
    return dataset, prompt


@dataclass(frozen=True)
class OptimizeArgs:
    """Every ``optimize`` argument and option (see reflex.cli.options), as click parsed it.

    Repeated options are tuples of their raw text (``NAME:WEIGHT``, ``KEY=VALUE``): the builder
    step (reflex.cli.build) parses them, so its errors name the flag.
    """

    # Inputs: DATASET is None when --inputs-file gives the rows.
    dataset: Path | None
    prompt: Path  # a file or folder, or a registry URI (prompts:/cat@production) as a Path
    models: tuple[str, ...]
    api_base: str | None
    temperature: float
    max_tokens: int | None
    tools_file: Path | None
    tool_choice: str | None
    response_format_file: Path | None
    optimize_tool_descriptions: bool
    format_guard: bool
    max_prompt_tokens: int | None
    prompt_token_cost: float
    input_field: str | None
    output_field: str | None
    variables: tuple[str, ...]
    rewrite_messages: tuple[str, ...]
    # Pipeline mode.
    pipeline_file: str | None
    inputs_file: Path | None
    pipeline_timeout: float
    trace_metrics: tuple[str, ...]
    # Scoring.
    metrics: tuple[str, ...]
    judge: str | None
    judge_api_base: str | None
    judge_criteria: Path | None
    guards: tuple[str, ...]
    strict_leakage: bool
    overfit_gap: float
    slice_by: tuple[str, ...]
    # Strategy.
    strategy: str | None
    strategy_options: tuple[str, ...]
    reasoning_model: str | None
    reasoning_base_url: str | None
    source_model: str | None
    feedback_field: str | None
    reasoning_templates: tuple[str, ...]
    max_iterations: int | None
    threshold: float | None
    batch_size: int
    early_stopping_patience: int
    accept: str
    race: bool
    allow_degenerate_seed: bool
    # Splits, concurrency, budgets, the run directory and resuming.
    train_split: float
    val_split: float
    group_key: str | None
    seed: int
    max_workers: int
    client_processes: int
    local_workers: int
    local_batch: int
    max_calls: int | None
    preset: BudgetPreset | None
    max_reasoning_calls: int | None
    max_total_calls: int | None
    max_cost: float | None
    prices: tuple[str, ...]
    max_seconds: float | None
    retry_window: float
    max_response_mb: float
    cache_namespace: str
    cache_url: str | None
    router_config: Path | None
    run_dir: str
    shared_run_dir: bool
    resume: bool
    resume_from: str | None
    # Output.
    output: Path | None
    results_json: Path | None
    dry_run: bool
    as_json: bool
    verbose: bool

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> OptimizeArgs:
        """click's parsed ``optimize`` params (plugin options already taken out), checked."""
        values = checked_params(cls, params, "optimize")
        values["dataset"], values["prompt"] = _positionals(
            values["dataset"], values["prompt"], values["inputs_file"]
        )
        return cls(**values)

    @property
    def resume_target(self) -> bool | str:
        """What ``PromptOptimizer.run(resume=...)`` takes: a run id, the latest, or none."""
        return self.resume_from or self.resume


# optimize options that make no sense for a comparison of several runs, and their fixed values.
COMPARE_FIXED: dict[str, object] = {
    "strategy_options": (),
    "seed": 0,
    "output": None,
    "results_json": None,
    "resume": False,
    "resume_from": None,
    "dry_run": False,
    "as_json": False,
}


@dataclass(frozen=True)
class CompareArgs:
    """``compare``: the shared ``optimize`` settings plus the strategies, seeds and datasets.

    ``datasets`` is empty for the one DATASET of ``run``; with ``--dataset FILE`` it is every
    dataset of the grid, DATASET (when given) first.
    """

    run: OptimizeArgs
    strategies: tuple[str, ...]
    seeds: int
    out_dir: Path | None
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    datasets: tuple[Path, ...] = ()

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> CompareArgs:
        shared = dict(params)
        names = tuple(n.strip() for n in shared.pop("strategies").split(",") if n.strip())
        if not names:
            raise click.BadParameter("give at least one strategy", param_hint="--strategies")
        seeds, out_dir = shared.pop("seeds"), shared.pop("out_dir")
        executor, ray_address = shared.pop("executor"), shared.pop("ray_address")
        extra = _extra_datasets(shared, tuple(shared.pop("datasets")))
        # The builder needs a strategy; compare() then runs each of ``names`` in turn.
        run = OptimizeArgs.from_params({**shared, **COMPARE_FIXED, "strategy": names[0]})
        if ray_address and executor != "ray":
            raise click.BadParameter("give --executor ray with it", param_hint="--ray-address")
        grid = (run.dataset, *extra) if extra else ()  # DATASET is set when extra is
        datasets = tuple(dict.fromkeys(path for path in grid if path is not None))
        return cls(run, names, seeds, out_dir, executor, ray_address, datasets)


def _extra_datasets(shared: dict[str, Any], extra: tuple[Path, ...]) -> tuple[Path, ...]:
    """``--dataset FILE``s besides DATASET; without DATASET (``compare --dataset A --dataset B
    PROMPT``) the first becomes ``shared``'s DATASET and the positional is the PROMPT."""
    if not extra:
        return ()
    if shared["inputs_file"] is not None:
        raise click.BadParameter(
            "--dataset adds DATASET files to the grid; it does not combine with --inputs-file",
            param_hint="--dataset",
        )
    if shared["prompt"] is None and shared["dataset"] is not None:
        shared["dataset"], shared["prompt"] = None, shared["dataset"]
    if shared["dataset"] is None:
        shared["dataset"], extra = extra[0], extra[1:]
    return extra
