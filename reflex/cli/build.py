"""From parsed ``optimize`` options to a configured :class:`~reflex.optimizer.PromptOptimizer`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from reflex.cli.common import number, pairs
from reflex.errors import ConfigurationError

__all__ = ["build_optimizer", "positionals"]


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


def build_optimizer(p: dict[str, Any]) -> Any:
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
        opt.add_metric(name, weight=number(weight, "--metric") if weight else 1.0)
    for guard in p["guards"]:
        name, _, tolerance = guard.partition(":")
        opt.add_guard(name, number(tolerance, "--guard") if tolerance else 0.0)
    if p["judge"]:
        opt.set_judge(p["judge"], criteria=p["judge_criteria"])
    elif p["judge_criteria"]:
        raise click.BadParameter("needs --judge PROVIDER/MODEL", param_hint="--judge-criteria")
    if p["slice_by"]:
        opt.set_slices(*p["slice_by"])
    opt.set_strategy(p["strategy"], **pairs(p["strategy_options"], "--strategy-option"))
    if p["reasoning_model"]:
        opt.set_reasoning_model(p["reasoning_model"], base_url=p["reasoning_base_url"])
    if p["source_model"]:
        opt.set_source_model(p["source_model"])
    for name, path in pairs(p["reasoning_templates"], "--reasoning-template").items():
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
