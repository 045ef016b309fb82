"""The plugin API: the one module strategy, metric and tracker plugins import from ``reflex``.

Everything a plugin needs is here, typed:

- **contracts**: :class:`Metric` / :class:`ModelGradedMetric` (score one output),
  :class:`Strategy` with :class:`BaseStrategy` (improve a prompt), :class:`StrategyContext`
  (what a strategy may see and do: data, :class:`RunSettings`, :class:`BudgetView`, evaluate,
  reason, record iterations), :class:`Callback` (lifecycle hooks for trackers);
- **hooks**: ``hookimpl`` and the registrar types each hook receives
  (:data:`StrategyRegistrar`, :data:`MetricRegistrar`, :data:`OptionRegistrar`);
- **records**: :class:`Example`, :class:`Score`, :class:`EvalSnapshot`, :class:`Sample`,
  :class:`IterationRecord`, :class:`OptimizationResult`, :class:`RunConfig`, :class:`Dataset`,
  :class:`PromptSpec`, :class:`PairOutcome`;
- **demos as chat turns**: :func:`render_chat_demos` writes the ``Examples (as chat turns):``
  section (:data:`CHAT_DEMOS_HEADER`) that the evaluator sends as user/assistant turns, and
  :func:`split_chat_demos` reads it back;
- **errors**: :class:`ReflexError`, :class:`ConfigurationError`, :class:`BudgetExhausted`;
- **reasoning helpers** for reflective strategies: :func:`render` a named reasoning template,
  :func:`system_prompt` (template + the run's language/migration guidance), :func:`ask` (ask the
  reasoning model, parse, retry once on :class:`ProposalError`, record an unusable answer),
  :func:`parse_proposal` / :func:`parse_prompts` / :func:`tagged` to read answers;
- **judging**: :class:`LLMJudge` (the built-in model-graded metric);
- **tracking helpers** for tracker adapters (:mod:`reflex.callbacks.tracking`): the params,
  tags, metric names and summary values every tracker logs the same way, ``GuardedCallback``
  (a tracker failure never stops a run), built on the one redactor (``redact_url``,
  ``redact_data``, ``scrub`` from :mod:`reflex.redact`); and from :mod:`reflex.run.trackers`
  the tracker ids kept in the run directory (``tracker_state``, ``save_tracker_state``),
  ``recorded_iterations``, ``recorded_initial_val`` and the per-example ``evaluation_rows``.

Built-in plugins (``reflex_strategies``, ``reflex_metrics``, ``reflex_mlflow``,
``reflex_wandb``) import this module and nothing else from ``reflex`` (tests/test_architecture.py
checks it), so a third-party plugin can do whatever they do. Names not listed here are internal
and may change without notice.
"""

from __future__ import annotations

from reflex.callbacks import Callback
from reflex.config import RunConfig
from reflex.data.dataset import Dataset
from reflex.data.demos import CHAT_DEMOS_HEADER, render_chat_demos, split_chat_demos
from reflex.data.prompts import PromptSpec
from reflex.errors import BudgetExhausted, ConfigurationError, ReflexError
from reflex.hookspecs import (
    CallbackFactory,
    MetricFactory,
    MetricRegistrar,
    OptionRegistrar,
    StrategyRegistrar,
    hookimpl,
)
from reflex.judging.judge import LLMJudge
from reflex.judging.reasoning import (
    Proposal,
    ProposalError,
    ask,
    parse_prompts,
    parse_proposal,
    render,
    system_prompt,
    tagged,
    template_names,
)
from reflex.result import (
    EvalSnapshot,
    IterationRecord,
    OptimizationResult,
    PairOutcome,
    RunEnd,
    Sample,
    StopReason,
)
from reflex.types import (
    BaseStrategy,
    BudgetView,
    Example,
    JudgeCall,
    Message,
    Metric,
    ModelGradedMetric,
    OptionsT,
    RunSettings,
    Score,
    Strategy,
    StrategyContext,
)

# isort: split
# Tracking helpers, for tracker adapters.
from reflex.callbacks.tracking import (
    INITIAL_VAL_LABEL,
    RUN_END_SERIES,
    GuardedCallback,
    ParamValue,
    RunningTotals,
    baseline_metrics,
    best_train_score,
    iteration_metrics,
    iteration_row,
    metric_key,
    on_model_thread,
    parse_tag_pairs,
    run_params,
    run_tags,
    split_params,
    split_summary,
    summary_metrics,
    wanted,
)
from reflex.redact import redact_data, redact_url, redacted_argv, scrub
from reflex.run.trackers import (
    evaluation_rows,
    recorded_initial_val,
    recorded_iterations,
    run_path,
    save_tracker_state,
    tracker_state,
)

__all__ = [
    "BaseStrategy",
    "BudgetExhausted",
    "BudgetView",
    "CHAT_DEMOS_HEADER",
    "Callback",
    "CallbackFactory",
    "ConfigurationError",
    "Dataset",
    "EvalSnapshot",
    "Example",
    "GuardedCallback",
    "INITIAL_VAL_LABEL",
    "IterationRecord",
    "JudgeCall",
    "LLMJudge",
    "Message",
    "Metric",
    "MetricFactory",
    "MetricRegistrar",
    "ModelGradedMetric",
    "OptimizationResult",
    "OptionRegistrar",
    "OptionsT",
    "PairOutcome",
    "ParamValue",
    "PromptSpec",
    "Proposal",
    "ProposalError",
    "RUN_END_SERIES",
    "ReflexError",
    "RunConfig",
    "RunEnd",
    "RunSettings",
    "RunningTotals",
    "Sample",
    "Score",
    "StopReason",
    "Strategy",
    "StrategyContext",
    "StrategyRegistrar",
    "ask",
    "baseline_metrics",
    "best_train_score",
    "evaluation_rows",
    "hookimpl",
    "iteration_metrics",
    "iteration_row",
    "metric_key",
    "on_model_thread",
    "parse_prompts",
    "parse_proposal",
    "parse_tag_pairs",
    "recorded_initial_val",
    "recorded_iterations",
    "redact_data",
    "redact_url",
    "redacted_argv",
    "render",
    "render_chat_demos",
    "run_params",
    "run_path",
    "run_tags",
    "save_tracker_state",
    "scrub",
    "split_chat_demos",
    "split_params",
    "split_summary",
    "summary_metrics",
    "system_prompt",
    "tagged",
    "template_names",
    "tracker_state",
    "wanted",
]
