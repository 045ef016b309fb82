"""The fluent builder: ``PromptOptimizer().set_dataset(d).add_provider(..).add_metric(..).run(p)``.

Each call validates its input at once, so a mistake is reported where it was made.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from reflex.callbacks import AnyCallback
from reflex.config import (
    BaseRunConfig,
    BudgetConfig,
    RunConfig,
    default,
    metric_specs,
    validation_message,
)
from reflex.data.dataset import Dataset, bind_dataset, load_dataset
from reflex.data.files import file_problem
from reflex.data.pipeline import Pipeline, load_inputs, load_pipeline, pipeline_from_function
from reflex.data.prompts import PromptLike, PromptSpec, prompt_spec, read_prompt
from reflex.data.templates import check_editable, row_fields
from reflex.data.tool_schemas import check_tool_choice, response_format_setting, tools_setting
from reflex.errors import ConfigurationError, MissingInputError
from reflex.models.client import parse_model
from reflex.plugins import get_registry
from reflex.result import OptimizationResult
from reflex.types import Metric

__all__ = ["PromptOptimizer", "prompt_spec", "read_prompt", "validation_message"]

_TRAIN, _VAL = default("train_split"), default("val_split")  # set_splits' defaults


class PromptOptimizer:
    """Fluent builder for one optimization run; ``run`` returns an OptimizationResult."""

    def __init__(self) -> None:
        self._dataset: Dataset | None = None
        self._metrics: list[Metric] = []
        # Every setting, validated; each setter replaces fields of it. Until a strategy is named
        # it follows the reasoning model (reflex.config.default_strategy).
        self._config = BaseRunConfig()
        self._strategy_named = False
        self._pipeline: Pipeline | None = None
        # How the dataset was given (a chat template rebinds its rows at run) and, for rows
        # with no input field, the error to raise when the prompt is no template after all.
        self._dataset_source: tuple[Any, str | None, str | None, str | None] | None = None
        self._missing_input: MissingInputError | None = None

    def _set(self, **values: Any) -> PromptOptimizer:
        """Replace these fields of the settings; the whole is validated again (cross-checks)."""
        fields = {**dict(self._config), **values}  # dict(): the values, not their redacted dump
        if not self._strategy_named and "strategy" not in values:
            fields["strategy"] = ""  # re-derived from the reasoning model as set now
        try:
            self._config = BaseRunConfig.model_validate(fields)
        except ValidationError as exc:
            raise ConfigurationError(validation_message(exc)) from None
        if "strategy" in values:
            self._strategy_named = bool(values["strategy"])
        return self

    def set_dataset(
        self,
        data: Dataset | str | Path | Sequence[dict[str, Any]] | Any,
        *,
        input_field: str | None = None,
        output_field: str | None = None,
        name: str | None = None,
    ) -> PromptOptimizer:
        """A Dataset, a JSONL/CSV path, a list of records or a pandas DataFrame.

        Rows for a chat template need no input field: ``run`` binds them to the template's
        variables (see :meth:`set_variables`).
        """
        self._missing_input = None
        if isinstance(data, Dataset):
            self._dataset, self._dataset_source = data, None
            return self
        self._dataset_source = (data, input_field, output_field, name)
        try:
            self._dataset = load_dataset(
                data, input_field=input_field, output_field=output_field, name=name
            )
        except MissingInputError as exc:  # raised at run unless the prompt is a template
            self._dataset, self._missing_input = None, exc
        return self

    def set_variables(
        self, fields: Mapping[str, str] | None = None, **more: str
    ) -> PromptOptimizer:
        """Which row field fills each chat-template ``{{variable}}`` whose name differs from it
        (``set_variables(question="q")``; CLI ``--var question=q``)."""
        merged = {**self._config.variables, **(fields or {}), **more}
        return self._set(variables=merged)

    def set_rewrite_messages(self, *names: str) -> PromptOptimizer:
        """The chat-template messages strategies may rewrite, by component name (``system``,
        ``user``, ``user_2``...); the others stay as written. None given: all."""
        return self._set(rewrite_messages=list(names) or None)

    def bind_template(self, spec: PromptSpec) -> None:
        """Bind the rows to ``spec``'s variables (a chat template), before anything is paid:
        what ``run`` does first, public for the compare grid, which binds each cell's rows."""
        if not spec.variables:
            if self._missing_input is not None:
                raise self._missing_input
            return
        if self._pipeline is not None:
            raise ConfigurationError("a chat template cannot be used with a pipeline")
        fields = row_fields(spec.variables, spec.names, self._config.variables)
        check_editable(spec.names, self._config.rewrite_messages)
        if self._dataset_source is not None:
            data, inputs, outputs, name = self._dataset_source
            self._dataset = load_dataset(
                data, input_field=inputs, output_field=outputs, name=name, variables=fields
            )
        elif self._dataset is not None:
            self._dataset = bind_dataset(self._dataset, fields)

    def set_inputs(self, data: str | Path | Sequence[Any]) -> PromptOptimizer:
        """Pipeline inputs: a JSON array / JSONL file, or a list, of strings or ``{input, ...}``.

        References (``ideal``) are optional; see :func:`reflex.data.pipeline.load_inputs`.
        """
        self._dataset = load_inputs(data)
        return self

    def set_pipeline(
        self,
        pipeline: Callable[..., Any] | str | Path,
        *,
        timeout: float | None = None,
        trace_metrics: Sequence[str] = (),
    ) -> PromptOptimizer:
        """Pipeline mode: ``pipeline(prompt, input, call)`` replaces the one task-model call.

        ``pipeline``: a function, or a ``.py`` file (``file.py:name``) defining ``run`` or
        ``pipeline``. ``timeout``: seconds per example (default 60). ``trace_metrics``: metrics
        that score the whole trace instead of the final output. See :mod:`reflex.data.pipeline`.
        """
        if isinstance(pipeline, (str, Path)):
            loaded = load_pipeline(pipeline)
        else:
            loaded = pipeline_from_function(pipeline)
        timeout_setting = {} if timeout is None else {"pipeline_timeout": timeout}
        self._set(
            pipeline=loaded.name,
            pipeline_sha256=loaded.sha256,
            trace_metrics=list(trace_metrics),
            **timeout_setting,
        )
        self._pipeline = loaded
        return self

    def add_provider(
        self,
        provider: str,
        model: str | None = None,
        *,
        api_base: str | None = None,
        base_url: str | None = None,
    ) -> PromptOptimizer:
        """Add a task model: ``add_provider("openai", "gpt-4o-mini")`` or ``("openai/gpt-4o")``.

        ``api_base`` applies to every task model (one endpoint per run); ``base_url`` is its
        alias (the name ``set_reasoning_model`` takes too).
        """
        api_base = _endpoint(api_base, base_url)
        full = parse_model(self._routed(f"{provider}/{model}" if model else provider))
        if api_base is not None:
            self._set(api_base=api_base)
        return self._set(models=[*self._config.models, full])

    add_model = add_provider

    def add_metric(
        self, metric: Metric | str, *, weight: float = 1.0, **options: Any
    ) -> PromptOptimizer:
        """A Metric object, or a registered metric name plus its options."""
        if isinstance(metric, str):
            metric = get_registry().metric(metric, **options)
        elif not isinstance(metric, Metric):
            raise ConfigurationError(
                f"{metric!r} is not a metric: it needs name, "
                "requires_reference and score(output, example)"
            )
        if not weight >= 0 or math.isinf(weight):  # also refuses nan, which passes every `<`
            raise ConfigurationError(
                f"metric weight must be a finite number >= 0 (0 = reported and guardable, not "
                f"optimized), got {weight}"
            )
        if any(m.name == metric.name for m in self._metrics):
            raise ConfigurationError(f"metric {metric.name!r} was added twice")
        self._metrics.append(metric)
        weights = {**self._config.metric_weights, metric.name: weight}
        return self._set(
            metrics=[m.name for m in self._metrics],
            metric_weights=weights,
            metric_specs=metric_specs(self._metrics),
        )

    def set_judge(
        self,
        model: str,
        *,
        criteria: str | Path | None = None,
        criteria_list: Sequence[Any] | None = None,
        weight: float = 1.0,
        **options: Any,
    ) -> PromptOptimizer:
        """Score with an LLM judge (``LLMJudge``), alone or beside other metrics.

        ``criteria``: rubric text or a rubric file; ``criteria_list``: named criteria with
        weights and gates. Judge calls are cached and counted under the "judge" role.
        """
        from reflex.judging.judge import LLMJudge

        model = self._routed(model)
        judge = LLMJudge(model, criteria=criteria, criteria_list=criteria_list, **options)
        return self.add_metric(judge, weight=weight)

    def add_guard(self, metric: str, tolerance: float = 0.0) -> PromptOptimizer:
        """A candidate may not lower ``metric`` on val by more than ``tolerance`` vs the start.

        Add the metric itself too; with ``weight=0`` it is reported and guarded, not optimized.
        """
        if not tolerance >= 0 or math.isinf(tolerance):  # nan would never reject anything
            raise ConfigurationError(
                f"guard tolerance must be a finite number >= 0, got {tolerance}"
            )
        guards = {**self._config.guards, metric: tolerance}
        return self._set(guards=guards)

    def set_allow_degenerate_seed(self, allow: bool = True) -> PromptOptimizer:
        """Run even when the starting prompt errors on, or scores 0 on, every preflight row."""
        return self._set(allow_degenerate_seed=allow)

    def set_strict_leakage(self, strict: bool = True) -> PromptOptimizer:
        """Reject candidates flagged for leakage instead of only recording the flags.

        Thresholds (see :mod:`reflex.checks.leakage`): ``configure(leakage_min_words=8,
        leakage_gain_margin=0.15, leakage_gain_ratio=3.0)``.
        """
        return self._set(strict_leakage=strict)

    def set_slices(self, *keys: str) -> PromptOptimizer:
        """Report test scores per group of these metadata keys, baseline vs final."""
        if not all(isinstance(k, str) and k for k in keys):
            raise ConfigurationError(f"slice keys must be non-empty strings, got {keys!r}")
        return self._set(slice_by=list(dict.fromkeys(keys)))

    def set_strategy(self, name: str | None = None, **options: Any) -> PromptOptimizer:
        """The strategy and its options; ``name=None`` keeps the default: ``iterative`` with a
        reasoning model, else ``auto`` (reasoning-free)."""
        if name is not None:
            get_registry().strategy(name)
        return self._set(strategy=name or "", strategy_options=options)

    def set_reasoning_model(
        self,
        model: str,
        *,
        api_base: str | None = None,
        temperature: float | None = None,
        base_url: str | None = None,
    ) -> PromptOptimizer:
        """The reasoning model; ``api_base`` its endpoint (``base_url``: the older name)."""
        endpoint = _endpoint(api_base, base_url)
        extra = {} if temperature is None else {"reasoning_temperature": temperature}
        model = self._routed(model)
        return self._set(reasoning_model=model, reasoning_base_url=endpoint, **extra)

    def _routed(self, model: str) -> str:
        """``router/<name>`` for a bare ``model_name`` of the Router config set (set_router)."""
        config = self._config.router_config
        if not config or not isinstance(model, str) or "/" in model:
            return model
        from reflex.models.router import routed_name

        return routed_name(model, config)

    def set_source_model(self, model: str) -> PromptOptimizer:
        """The model the prompt was written for; reasoning prompts add migration guidance."""
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError(f"source model must be a model name, got {model!r}")
        return self._set(source_model=model.strip())

    def set_feedback_field(self, name: str | None) -> PromptOptimizer:
        """A dataset column (e.g. a reviewer's ``critique``) shown to the reasoning model as each
        train row's feedback, never to the task model; None: none. A name no train row has is
        refused when the run starts, before any call."""
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ConfigurationError(f"feedback field must be a column name, got {name!r}")
        return self._set(feedback_field=name.strip() if name else None)

    def set_reasoning_template(self, name: str, text: str | Path) -> PromptOptimizer:
        """Override reasoning template ``name`` (see ``reasoning.template_names()``)."""
        from reflex.judging.reasoning import template

        template(name)  # unknown names raise, listing the known ones
        body = read_prompt(text, "reasoning template file")
        merged = {**self._config.reasoning_templates, name: body}
        return self._set(reasoning_templates=merged)

    def set_splits(
        self, train: float = _TRAIN, val: float = _VAL, *, group_key: str | None = None
    ) -> PromptOptimizer:
        """The fractions of rows for training and validation (the rest is the test split);
        ``group_key``: a metadata key whose rows stay in one split."""
        return self._set(train_split=train, val_split=val, group_key=group_key)

    def set_budget(
        self,
        *,
        max_calls: int | None = None,
        max_reasoning_calls: int | None = None,
        max_cost: float | None = None,
        max_seconds: float | None = None,
        max_total_calls: int | None = None,
    ) -> PromptOptimizer:
        """Limits, each None for none. ``max_calls``: paid task-model calls (every call a
        pipeline makes); ``max_reasoning_calls``: reasoning-model calls; ``max_total_calls``:
        every paid call of every role (task, judge, reasoning); ``max_cost``: dollars (see
        ``set_price`` for models LiteLLM cannot price); ``max_seconds``: wall-clock. Each keeps
        room for the final test evaluation, estimated from the baseline's measurement."""
        try:  # validated on its own, so an error names the argument (max_calls=0), not budget.
            budget = BudgetConfig(
                max_calls=max_calls,
                max_reasoning_calls=max_reasoning_calls,
                max_total_calls=max_total_calls,
                max_cost=max_cost,
                max_seconds=max_seconds,
            )
        except ValidationError as exc:
            raise ConfigurationError(validation_message(exc)) from None
        return self._set(budget=budget)

    def set_retry_window(self, seconds: float) -> PromptOptimizer:
        """How long the provider may answer nothing before a call that keeps failing stops
        retrying (default 120 s; finite, > 0). Under ``max_seconds`` no retry waits past the
        deadline whatever the window (the step ends, and the final keeps its reserve)."""
        return self._set(retry_window=seconds)

    def set_max_response_mb(self, megabytes: float) -> PromptOptimizer:
        """The largest provider answer read, in MiB (default 16; finite, > 0): a larger one
        fails its call, not retried, instead of being read into memory whole."""
        return self._set(max_response_mb=megabytes)

    def set_price(
        self, model: str, input_per_million: float, output_per_million: float
    ) -> PromptOptimizer:
        """The price of ``model`` in USD per million input and output tokens, used instead of
        LiteLLM's: a self-hosted or unpriced model then has a cost, and ``max_cost`` binds."""
        pair = (input_per_million, output_per_million)
        return self._set(prices={**self._config.prices, model: pair})

    def configure(self, **settings: Any) -> PromptOptimizer:
        """Set any RunConfig field by name (seed, max_iterations, max_workers, run_dir, ...)."""
        unknown = set(settings) - set(RunConfig.model_fields)
        if unknown:
            raise ConfigurationError(
                f"unknown setting(s) {sorted(unknown)}; known: "
                f"{', '.join(sorted(RunConfig.model_fields))}"
            )
        return self._set(**settings)

    def set_tools(
        self,
        tools: str | Path | Sequence[Mapping[str, Any]] | None,
        *,
        choice: str | Mapping[str, Any] | None = None,
    ) -> PromptOptimizer:
        """Tools offered with every request: a JSON file or the list of OpenAI function
        schemas (a row's own ``tools`` replace them; None: none), and the tool ``choice``
        (``auto``, ``required``, ``none`` or a function's name; None: the provider's default)."""
        listed = None if tools is None else tools_setting(tools, "set_tools")
        chosen = check_tool_choice(choice, listed, "set_tools(choice=...)")
        return self._set(tools=listed, tool_choice=chosen)

    def set_optimize_tool_descriptions(self, optimize: bool = True) -> PromptOptimizer:
        """Let strategies rewrite the function and parameter descriptions of the tools (the run's
        ``set_tools``, else those the rows offer); names, types, enums and required lists stay
        fixed (:mod:`reflex.data.tool_text`)."""
        return self._set(optimize_tool_descriptions=optimize)

    def tool_descriptions_target(self) -> list[Mapping[str, Any]]:
        """The tools whose descriptions ``set_optimize_tool_descriptions`` rewrites (the run's
        ``set_tools``, else each function the dataset's rows offer, once); [] when it is off."""
        from reflex.data.tool_text import run_tools

        config = self.build_config()
        if not config.optimize_tool_descriptions:
            return []
        return run_tools(config.tools, [e.tools for e in self._dataset or () if e.tools])

    def set_format_guard(self, on: bool = True) -> PromptOptimizer:
        """Reject a candidate whose answers break the JSON schema or the tool-call format more
        often than the incumbent's on the minibatch, before its val evaluation (default on)."""
        return self._set(format_guard=on)

    def set_response_format(self, fmt: str | Path | Mapping[str, Any] | None) -> PromptOptimizer:
        """The answer format asked for: a JSON file or OpenAI's ``{"type": "json_object"}`` /
        ``{"type": "json_schema", "json_schema": {...}}`` (a bare JSON Schema too); None: text."""
        chosen = None if fmt is None else response_format_setting(fmt, "set_response_format")
        return self._set(response_format=chosen)

    def set_accept(self, rule: str) -> PromptOptimizer:
        """When a candidate replaces the best prompt: ``"significant"`` (better on the val rows
        by a one-sided paired test at 0.1; ``"significant:0.05"`` another level; the winner
        corrected for best-of-many), ``"margin:0.02"`` (a mean val gain of at least 0.02) or
        ``"any"`` (any higher val score)."""
        return self._set(accept=rule)

    def set_seed(self, seed: int) -> PromptOptimizer:
        return self._set(seed=seed)

    def set_max_iterations(self, n: int) -> PromptOptimizer:
        return self._set(max_iterations=n)

    def set_max_workers(self, n: int) -> PromptOptimizer:
        return self._set(max_workers=n)

    def set_run_dir(self, path: str | Path, *, shared: bool | None = None) -> PromptOptimizer:
        """Where runs are recorded (default ``.reflex``). The folders a run creates there are
        private (0700, files 0600); ``shared=True`` makes them group-readable (0750, files
        0640) for a team's shared folder. ``None`` keeps the current setting."""
        if shared is None:
            return self._set(run_dir=str(path))
        return self._set(run_dir=str(path), shared_run_dir=shared)

    def set_router(self, config: str | Path | Mapping[str, Any]) -> PromptOptimizer:
        """Route models through a LiteLLM Router: its YAML file or the mapping (docs/scaling.md)."""
        from reflex.models.router import load_router_config

        if isinstance(config, str | Path):
            problem = file_problem(Path(config), "router config")  # a FIFO would block forever
            if problem is not None:
                raise ConfigurationError(f"{config}: {problem}")
        load_router_config(config)  # a bad config fails here, with the entry it is about
        value = dict(config) if isinstance(config, Mapping) else str(config)
        return self._set(router_config=value)

    def set_cache_url(self, url: str | None) -> PromptOptimizer:
        """A shared response cache (redis://... or a SQL URL); None: the run dir's sqlite."""
        return self._set(cache_url=url)

    def clone(self) -> PromptOptimizer:
        """An independent copy of this builder (dataset and metric objects are shared)."""
        other = PromptOptimizer()
        other._dataset, other._metrics = self._dataset, list(self._metrics)
        other._config = self._config.model_copy(deep=True)
        other._strategy_named = self._strategy_named
        other._pipeline = self._pipeline
        other._dataset_source, other._missing_input = self._dataset_source, self._missing_input
        return other

    def build_config(self) -> RunConfig:
        """The validated RunConfig this builder would run with."""
        if self._dataset is None and self._missing_input is not None:
            raise self._missing_input
        if self._dataset is None:
            raise ConfigurationError("no dataset: call .set_dataset(path_or_records) first")
        if not self._config.models:
            raise ConfigurationError("no task model: call .add_provider('openai', 'gpt-4o-mini')")
        if not self._metrics:
            raise ConfigurationError("no metric: call .add_metric(...) e.g. 'exact_match'")
        self._check_references()
        unknown = sorted(set(self._config.guards) - {m.name for m in self._metrics})
        if unknown:
            raise ConfigurationError(
                f"guard metric(s) {unknown} are not among the run's metrics "
                f"({', '.join(m.name for m in self._metrics)}): add them with weight=0"
            )
        traced = sorted(set(self._config.trace_metrics) - {m.name for m in self._metrics})
        if traced:
            raise ConfigurationError(
                f"trace metric(s) {traced} are not among the run's metrics "
                f"({', '.join(m.name for m in self._metrics)}): add them with --metric"
            )
        dataset = {"dataset_name": self._dataset.name, "dataset_size": len(self._dataset)}
        return RunConfig.model_validate({**dict(self._config), **dataset})

    def _check_references(self) -> None:
        assert self._dataset is not None
        if self._dataset.with_references == 0 and all(m.requires_reference for m in self._metrics):
            names = ", ".join(m.name for m in self._metrics)
            raise ConfigurationError(
                f"dataset {self._dataset.name!r} has no reference answers "
                f"but every metric ({names}) needs one: add an 'ideal' "
                "field or use a judge metric"
            )

    def run(
        self,
        prompt: PromptLike,
        callbacks: Sequence[AnyCallback] = (),
        *,
        resume: bool | str = False,
    ) -> OptimizationResult:
        """Optimize ``prompt``; returns the result.

        ``prompt``: text, a Path to a prompt file (.md/.txt, or .json/.yaml/.toml components,
        or a directory of .md components), a :class:`reflex.data.prompts.PromptSpec`, a mapping
        of component names to texts (see :mod:`reflex.data.prompts`), or a chat template: a
        list of ``{"role", "content"}`` messages with ``{{variable}}`` placeholders, each filled
        from the row field of that name (or the one :meth:`set_variables` maps it to). The
        engine optimizes the assembled text; ``result.best_components`` holds the winner's
        components when known.

        ``callbacks``: objects with any subset of the ``on_*`` hooks of :class:`reflex.Callback`
        (subclassing it is optional); one that raises is a warning, never the end of the run.

        ``resume=True`` continues the latest unfinished run for this dataset and prompt in the
        run directory; ``resume="<run id>"`` continues that run. Paid calls are not repeated.
        """
        from reflex.run.start import start_run

        spec = prompt_spec(prompt)
        self.bind_template(spec)
        config = self.build_config()
        assert self._dataset is not None
        return start_run(
            config,
            self._dataset,
            self._metrics,
            spec,
            callbacks,
            pipeline=self._pipeline,
            resume=resume,
            strategy_named=self._strategy_named,
        )


def _endpoint(api_base: str | None, base_url: str | None) -> str | None:
    """``api_base``, or its alias ``base_url``; both given (and different) is an error."""
    if api_base is not None and base_url is not None and api_base != base_url:
        raise ConfigurationError("give the endpoint once: api_base=... (base_url is its alias)")
    return api_base if api_base is not None else base_url
