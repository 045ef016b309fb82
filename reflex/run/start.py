"""Starting a run from the builder: a new one, or a resumed one under its lock.

Invariants: a resumed run is locked (:func:`reflex.run.lock.locked_run`) before its state is
read and until the engine returns, so two resumes of one run never both proceed; the note that
``auto`` runs for want of a strategy and a reasoning model comes only after the engine has
validated the settings (bad input stays exactly one error line).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from reflex.callbacks import AnyCallback
from reflex.config import RunConfig
from reflex.data.dataset import Dataset, check_run_tools
from reflex.data.pipeline import Pipeline
from reflex.data.prompts import PromptSpec, with_tool_descriptions
from reflex.data.tool_text import run_tools
from reflex.errors import ConfigurationError
from reflex.plugins import get_registry
from reflex.result import OptimizationResult
from reflex.run.engine import Engine
from reflex.run.estimate import price_plan
from reflex.run.lock import locked_run
from reflex.run.plan import PricedPlan
from reflex.run.resume import find_resumable, load_resume
from reflex.run.screening import prompt_length_problem
from reflex.run.sequence import check_steps
from reflex.types import Metric

__all__ = ["plan_run", "start_run"]

logger = logging.getLogger("reflex.optimizer")


def start_run(
    config: RunConfig,
    dataset: Dataset,
    metrics: Sequence[Metric],
    spec: PromptSpec,
    callbacks: Sequence[AnyCallback],
    *,
    pipeline: Pipeline | None,
    resume: bool | str,
    strategy_named: bool,
) -> OptimizationResult:
    """Run the engine on ``spec``; ``resume`` is False, True (the latest matching unfinished
    run) or a run id. ``strategy_named``: the user chose the strategy (else the default's note)."""
    spec = _checked(config, dataset, spec, pipeline)
    text = spec.render()
    strategy_cls = get_registry().strategy(config.strategy)
    run_id: str | None = None
    if resume:
        run_id = (
            resume
            if isinstance(resume, str)
            else find_resumable(config.run_dir, dataset, text, config)
        )
    held: AbstractContextManager[None] = (
        locked_run(Path(config.run_dir) / "runs" / run_id) if run_id else nullcontext()
    )
    with held:
        point = load_resume(config, dataset, text, run_id) if run_id else None
        engine = Engine(
            config,
            dataset,
            metrics,
            strategy_cls,
            callbacks,
            point,
            prompt_spec=spec,
            pipeline=pipeline,
        )
        if not strategy_named and not config.reasoning_model:
            logger.warning(
                "no strategy and no reasoning model named: running %r (reasoning-free); name "
                "one with -s/.set_strategy(), or add a reasoning model for 'iterative'",
                config.strategy,
            )
        return engine.run(text)


def _checked(
    config: RunConfig, dataset: Dataset, spec: PromptSpec, pipeline: Pipeline | None
) -> PromptSpec:
    """The prompt as the run optimizes it, after the checks every run makes before building
    its engine (a chat template's prompt mode, the tools, tool descriptions)."""
    if spec.messages is not None and config.prompt_mode == "prepend":
        raise ConfigurationError(
            "prompt_mode='prepend' does not apply to a chat template: its messages are the "
            "whole conversation, with no row system message to prepend to; leave prompt_mode "
            "at 'replace', or write that text into the template's system message"
        )
    check_steps(config)  # a sequence's steps: known, their reasoning model, their options
    # Before any call: every reference call, and a tool choice naming a function, is offered.
    check_run_tools(dataset, config.tools, config.tool_choice)
    if config.optimize_tool_descriptions:
        if pipeline is not None:  # a pipeline makes its own calls: no request carries the tools
            raise ConfigurationError(
                "--optimize-tool-descriptions does not work with a pipeline; leave it out"
            )
        spec = _with_tools(spec, config, dataset)
    problem = prompt_length_problem(config.max_prompt_tokens, spec.render(), "the starting prompt")
    if problem is not None:  # every candidate would be refused: say so before any call
        raise ConfigurationError(f"{problem}; raise the limit or shorten the prompt")
    return spec


def plan_run(
    config: RunConfig,
    dataset: Dataset,
    metrics: Sequence[Metric],
    spec: PromptSpec,
    *,
    pipeline: Pipeline | None,
) -> PricedPlan:
    """The priced plan of a new run (``--dry-run``): every check a run makes before its first
    call (the prompt, tools, strategy and its options, models and keys, the cache URL, splits,
    the feedback field), then the plan; no call is made and nothing is written."""
    spec = _checked(config, dataset, spec, pipeline)
    strategy_cls = get_registry().strategy(config.strategy)
    engine = Engine(config, dataset, metrics, strategy_cls, prompt_spec=spec, pipeline=pipeline)
    return price_plan(engine, spec.render())


def _with_tools(spec: PromptSpec, config: RunConfig, dataset: Dataset) -> PromptSpec:
    """``spec`` led by the tools' descriptions as optimizable text (--optimize-tool-descriptions):
    the run's tools, else the functions the rows offer (:func:`run_tools`)."""
    tools = run_tools(config.tools, [e.tools for e in dataset if e.tools])
    if not tools:
        raise ConfigurationError(
            "--optimize-tool-descriptions: the run offers no tools; give them with --tools "
            "FILE (or rows' 'tools'), or leave the option out"
        )
    return with_tool_descriptions(spec, tools)
