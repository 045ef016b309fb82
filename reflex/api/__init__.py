"""The plugin API: the one module strategy and metric plugins import from ``reflex``.

Everything a plugin needs is here, typed:

- **contracts**: :class:`Metric` / :class:`ModelGradedMetric` (score one output),
  :class:`Strategy` with :class:`BaseStrategy` (improve a prompt), :class:`StrategyContext`
  (what every strategy may see and do: data, :class:`RunSettings`, :class:`BudgetView`,
  evaluate, record iterations with an :class:`Outcome`) and the opt-in capabilities it asks
  for by key (``ctx.capability(REASONING)``: :class:`Reasoning`, :class:`Components`,
  :class:`Screening`, :class:`Phases`, :class:`Judging`, :class:`Strategies`),
  :class:`Callback` (lifecycle hooks for trackers; :class:`EvalLabel` names an evaluation);
- **hooks**: ``hookimpl`` and the registrar types each hook receives
  (:data:`StrategyRegistrar`, :data:`MetricRegistrar`, :data:`OptionRegistrar`,
  :data:`PromptSourceRegistrar`: a prompt URI; :data:`DatasetSourceRegistrar` with its
  :data:`DatasetReader`: a dataset named ``scheme:rest``);
- **providers**: :func:`register_provider` (``name/<model>`` answered by an in-process LiteLLM
  ``CustomLLM``);
- **records**: :class:`Example`, :class:`Score`, :class:`EvalSnapshot`, :class:`Sample`,
  :class:`IterationRecord`, :class:`OptimizationResult`, :class:`RunConfig`, :class:`Dataset`,
  :class:`PromptSpec`, :class:`PairOutcome`;
- **demos as chat turns**: :func:`render_chat_demos` writes the ``Examples (as chat turns):``
  section (:data:`CHAT_DEMOS_HEADER`) that the evaluator sends as user/assistant turns, and
  :func:`split_chat_demos` reads it back; :func:`saved_template` is a chat template's candidate
  as the list of messages to save (its demos as fixed turns);
- **tool calls as answer text**: :class:`ToolCall`, :func:`parse_answer` (an answer's content and
  calls), :func:`render_answer` (its inverse), from :mod:`reflex.toolcalls`;
- **errors**: :class:`ReflexError`, :class:`ConfigurationError`, :class:`BudgetExhausted`;
- **reasoning helpers** for reflective strategies: :func:`render` a named reasoning template,
  :func:`system_prompt` (template + the run's language/migration guidance), :func:`ask` (ask the
  reasoning model, parse, retry once on :class:`ProposalError`, record an unusable answer),
  :func:`parse_proposal` / :func:`parse_prompts` / :func:`tagged` to read answers, and
  :func:`placeholders` (a chat template's ``{{variables}}`` in a text, which a rewrite keeps);
- **judging**: :class:`LLMJudge` (the built-in model-graded metric);
- **failure kinds** of tool-call and JSON answers: :func:`failure_kind` (one sample's, from its
  objectives), :func:`failure_counts`, and the kinds :data:`FORMAT_FAILURES` (a format rule
  fixes them), :data:`VALUE_FAILURES` (demos do) and :data:`WRONG_FUNCTION` (a tool-selection
  rule does), from :mod:`reflex.checks.failures`; on a label task :func:`label_failure` (an
  answer outside the label set: :data:`NEAR_MISS_LABEL` or :data:`OFF_LABEL`).

Tracker adapters also import :mod:`reflex.api.tracking` (the params, tags and metrics every
tracker logs the same way, ``GuardedCallback``, the redactor, the tracker state kept in the run
directory); users import :mod:`aevyra_reflex`.

Built-in plugins (``reflex_strategies``, ``reflex_metrics``) import this module and nothing else
from ``reflex``, the adapters (``reflex_mlflow``, ``reflex_wandb``) this one and
:mod:`reflex.api.tracking` (tests/test_architecture.py checks it), so a third-party plugin can do
whatever they do. Names not listed here or there are internal and may change without notice;
tests/test_public_api.py checks that each listed name exists and is named in
docs/architecture.md ("Three doors").
"""

from __future__ import annotations

from reflex.callbacks import Callback
from reflex.config import RunConfig
from reflex.data.dataset import Dataset
from reflex.data.demos import CHAT_DEMOS_HEADER, render_chat_demos, split_chat_demos
from reflex.data.prompts import PromptSpec
from reflex.data.templates import placeholders
from reflex.errors import BudgetExhausted, ConfigurationError, ReflexError
from reflex.hookspecs import (
    CallbackFactory,
    MetricFactory,
    MetricRegistrar,
    OptionRegistrar,
    PromptSourceRegistrar,
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
# Tool calls as answer text (issue 31): what tool_call-style metrics read.
# The strategy contract's opt-in capabilities (ctx.capability(KEY)), the iteration Outcome and
# the typed evaluation label (issue 30, item 4).
from reflex.callbacks import EvalLabel

# Failure kinds of tool-call and JSON answers (issue 31, item 4).
from reflex.checks.failures import (
    FORMAT_FAILURES,
    NEAR_MISS_LABEL,
    OFF_LABEL,
    VALUE_FAILURES,
    WRONG_FUNCTION,
    failure_counts,
    failure_kind,
    label_failure,
)

# The paired test of the acceptance gate, for strategies that compare candidates on shared
# rows (the racing evaluator, issue 33 item 2).
from reflex.checks.maxstat import one_sided_p, paired_diffs

# Dataset sources (scheme:rest, the register_dataset_sources hook), a chat template as saved
# (its demos as fixed turns) and in-process providers: what reflex_mlflow's dataset sources and
# ReflexPromptOptimizer use (issue 32, items 4-5).
from reflex.data.demos import saved_template
from reflex.hookspecs import DatasetReader, DatasetSourceRegistrar
from reflex.models.providers import register_provider
from reflex.result import Outcome
from reflex.toolcalls import ToolCall, parse_answer, render_answer
from reflex.types import (
    COMPONENTS,
    JUDGING,
    PHASES,
    REASONING,
    SCREENING,
    STRATEGIES,
    Capability,
    Components,
    Judging,
    Phases,
    Reasoning,
    Screening,
    Strategies,
)

__all__ = [
    "BaseStrategy",
    "BudgetExhausted",
    "BudgetView",
    "CHAT_DEMOS_HEADER",
    "COMPONENTS",
    "Callback",
    "CallbackFactory",
    "Capability",
    "Components",
    "ConfigurationError",
    "Dataset",
    "DatasetReader",
    "DatasetSourceRegistrar",
    "EvalLabel",
    "EvalSnapshot",
    "Example",
    "FORMAT_FAILURES",
    "IterationRecord",
    "JUDGING",
    "JudgeCall",
    "Judging",
    "LLMJudge",
    "Message",
    "Metric",
    "MetricFactory",
    "MetricRegistrar",
    "ModelGradedMetric",
    "NEAR_MISS_LABEL",
    "OFF_LABEL",
    "OptimizationResult",
    "OptionRegistrar",
    "OptionsT",
    "Outcome",
    "PHASES",
    "PairOutcome",
    "Phases",
    "PromptSourceRegistrar",
    "PromptSpec",
    "Proposal",
    "ProposalError",
    "REASONING",
    "Reasoning",
    "ReflexError",
    "RunConfig",
    "RunEnd",
    "RunSettings",
    "SCREENING",
    "STRATEGIES",
    "Sample",
    "Score",
    "Screening",
    "StopReason",
    "Strategies",
    "Strategy",
    "StrategyContext",
    "StrategyRegistrar",
    "ToolCall",
    "VALUE_FAILURES",
    "WRONG_FUNCTION",
    "ask",
    "failure_counts",
    "failure_kind",
    "hookimpl",
    "label_failure",
    "one_sided_p",
    "paired_diffs",
    "parse_answer",
    "parse_prompts",
    "parse_proposal",
    "placeholders",
    "register_provider",
    "render",
    "render_answer",
    "render_chat_demos",
    "saved_template",
    "split_chat_demos",
    "system_prompt",
    "tagged",
    "template_names",
]
