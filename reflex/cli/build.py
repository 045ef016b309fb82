"""From typed ``optimize`` arguments to a configured :class:`~reflex.optimizer.PromptOptimizer`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from reflex.cli.args import OptimizeArgs
from reflex.cli.common import number, pairs
from reflex.cli.options import DEFAULT_METRIC
from reflex.data.tool_schemas import check_tool_choice, tools_setting
from reflex.errors import ConfigurationError

if TYPE_CHECKING:
    from reflex.optimizer import PromptOptimizer

__all__ = ["build_optimizer", "var_fields"]


def _with_data(opt: PromptOptimizer, args: OptimizeArgs) -> None:
    """The rows (DATASET or --inputs-file) and, in pipeline mode, the pipeline."""
    if args.inputs_file is not None:
        opt.set_inputs(args.inputs_file)
    elif args.dataset is not None:  # OptimizeArgs holds one of them
        opt.set_dataset(args.dataset, input_field=args.input_field, output_field=args.output_field)
    if args.variables:
        opt.set_variables(var_fields(args.variables))
    if args.rewrite_messages:
        opt.set_rewrite_messages(*args.rewrite_messages)
    if args.pipeline_file is not None:
        opt.set_pipeline(
            args.pipeline_file, timeout=args.pipeline_timeout, trace_metrics=args.trace_metrics
        )
    elif args.trace_metrics:
        raise click.BadParameter("needs --pipeline-file FILE.py", param_hint="--score-trace")


def var_fields(items: tuple[str, ...]) -> dict[str, str]:
    """``--var NAME=FIELD`` items as ``{NAME: FIELD}``."""
    fields: dict[str, str] = {}
    for item in items:
        name, sep, field = item.partition("=")
        if not sep or not name.strip() or not field.strip():
            raise click.BadParameter(f"{item!r} is not NAME=FIELD", param_hint="--var")
        fields[name.strip()] = field.strip()
    return fields


def metric_head(head: str) -> tuple[str, str, str]:
    """``NAME[:TARGET][:WEIGHT]`` -> (name, target, weight): the last part is the weight when
    it reads as a number (``exact_match:0.5``), anything else is the target a metric family
    scores with (``mlflow:Correctness``, ``mlflow:Correctness:0.5``)."""
    name, _, rest = head.partition(":")
    target, _, last = rest.rpartition(":")
    try:
        float(last)
    except ValueError:
        return name, rest, ""
    return name, target, last


def _with_scoring(opt: PromptOptimizer, args: OptimizeArgs) -> None:
    """Metrics, guards, the judge and slices."""
    # Without --metric: exact_match, unless a judge scores the run (then the judge alone).
    for metric in args.metrics or (() if args.judge else (DEFAULT_METRIC,)):
        head, *options = metric.split(",")  # NAME[:TARGET][:WEIGHT][,KEY=VALUE...]
        name, target, weight = metric_head(head)
        if name == "llm_judge":  # its model comes from --judge, never from --metric
            raise ConfigurationError(
                "--metric llm_judge needs a model: use --judge PROVIDER/MODEL "
                "(without --metric llm_judge)"
            )
        opt.add_metric(
            name,
            weight=number(weight, "--metric") if weight else 1.0,
            **({"target": target} if target else {}),
            **pairs(tuple(options), "--metric"),
        )
    for guard in args.guards:
        name, _, tolerance = guard.partition(":")
        opt.add_guard(name, number(tolerance, "--guard") if tolerance else 0.0)
    if args.judge:
        if args.judge_api_base:
            opt.set_judge(args.judge, criteria=args.judge_criteria, api_base=args.judge_api_base)
        else:
            opt.set_judge(args.judge, criteria=args.judge_criteria)
    elif args.judge_criteria or args.judge_api_base:
        flag = "--judge-criteria" if args.judge_criteria else "--judge-api-base"
        raise click.BadParameter("needs --judge PROVIDER/MODEL", param_hint=flag)
    if args.slice_by:
        opt.set_slices(*args.slice_by)


def _with_strategy(opt: PromptOptimizer, args: OptimizeArgs) -> None:
    """The strategy and its options, the reasoning model and its templates."""
    # No -s: the default (iterative with a reasoning model, else auto), as in the builder.
    opt.set_strategy(args.strategy, **pairs(args.strategy_options, "--strategy-option"))
    if args.reasoning_model:
        opt.set_reasoning_model(args.reasoning_model, base_url=args.reasoning_base_url)
    if args.source_model:
        opt.set_source_model(args.source_model)
    if args.feedback_field:
        opt.set_feedback_field(args.feedback_field)
    for name, path in pairs(args.reasoning_templates, "--reasoning-template").items():
        opt.set_reasoning_template(name, Path(str(path)))


def _with_limits(opt: PromptOptimizer, args: OptimizeArgs) -> None:
    """The budgets (--budget, --max-calls ...) and the price table (--price MODEL=IN:OUT)."""
    opt.set_budget(
        args.preset,
        max_calls=args.max_calls,
        max_reasoning_calls=args.max_reasoning_calls,
        max_cost=args.max_cost,
        max_seconds=args.max_seconds,
        max_total_calls=args.max_total_calls,
    )
    for item in args.prices:
        model, sep, pair = item.rpartition("=")
        given, colon, taken = pair.partition(":")
        if not sep or not model or not colon:
            raise ConfigurationError(
                f"--price {item!r}: write MODEL=IN:OUT, USD per million input and output "
                "tokens (e.g. openai/my-vllm=0.2:0.6)"
            )
        opt.set_price(model, number(given, "--price"), number(taken, "--price"))


def build_optimizer(args: OptimizeArgs) -> PromptOptimizer:
    """A builder configured from every option in ``args``; each call validates its values."""
    from reflex.optimizer import PromptOptimizer

    opt = PromptOptimizer()
    if args.router_config:  # first: a model_name given bare (-m task) is routed by name
        opt.set_router(str(args.router_config))
    _with_data(opt, args)
    for model in args.models:
        opt.add_provider(model, api_base=args.api_base)
    tools = None if args.tools_file is None else tools_setting(args.tools_file, "--tools")
    choice = check_tool_choice(args.tool_choice, tools, "--tool-choice")  # None: rows' tools
    if tools is not None:
        opt.set_tools(tools, choice=choice)
    elif choice is not None:
        opt.configure(tool_choice=choice)
    if args.response_format_file is not None:
        opt.set_response_format(args.response_format_file)
    _with_scoring(opt, args)
    _with_strategy(opt, args)
    opt.set_splits(args.train_split, args.val_split, group_key=args.group_key)
    _with_limits(opt, args)
    return opt.configure(
        max_iterations=args.max_iterations,
        score_threshold=args.threshold,
        seed=args.seed,
        batch_size=args.batch_size,
        early_stopping_patience=args.early_stopping_patience,
        accept=args.accept,
        race=args.race,
        max_workers=args.max_workers,
        retry_window=args.retry_window,
        max_response_mb=args.max_response_mb,
        client_processes=args.client_processes,
        local_workers=args.local_workers,
        local_batch=args.local_batch,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        run_dir=args.run_dir,
        shared_run_dir=args.shared_run_dir,
        allow_degenerate_seed=args.allow_degenerate_seed,
        strict_leakage=args.strict_leakage,
        optimize_tool_descriptions=args.optimize_tool_descriptions,
        format_guard=args.format_guard,
        max_prompt_tokens=args.max_prompt_tokens,
        prompt_token_cost=args.prompt_token_cost,
        overfit_gap=args.overfit_gap,
        cache_namespace=args.cache_namespace,
        cache_url=args.cache_url,
        router_config=str(args.router_config) if args.router_config else None,
    )
