"""The fluent builder: ``PromptOptimizer().set_dataset(d).add_provider(..).add_metric(..).run(p)``.

Each call validates its input at once, so a mistake is reported where it was made.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from pydantic import ValidationError

from reflex.callbacks import AnyCallback
from reflex.config import (
    BudgetConfig,
    BudgetPreset,
    RunConfig,
    metric_specs,
    validation_message,
)
from reflex.data.files import file_problem
from reflex.data.prompts import PromptLike, read_prompt
from reflex.data.run_data import DataSide
from reflex.errors import ConfigurationError
from reflex.models.run_models import ModelSide
from reflex.plugins import get_registry
from reflex.result import OptimizationResult
from reflex.run.prompt_sources import prompt_spec
from reflex.run.sequence import sequence_setting
from reflex.types import Metric

if TYPE_CHECKING:
    from reflex.run.plan import PricedPlan

__all__ = ["PromptOptimizer", "prompt_spec", "read_prompt", "validation_message"]


class PromptOptimizer(DataSide, ModelSide):
    """Fluent builder for one optimization run; ``run`` returns an OptimizationResult.

    Every setting is held validated (:class:`reflex.config.SettingsBuilder`); the setters of
    the rows (dataset, pipeline, template binding, splits, tools) are :class:`DataSide`'s
    (``reflex.data.run_data``), those of the models called :class:`ModelSide`'s
    (``reflex.models.run_models``); the metrics, the search and the run are set here.
    """

    def __init__(self) -> None:
        super().__init__()
        self._metrics: list[Metric] = []

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

    def set_strategy(self, name: str | None = None, **options: Any) -> PromptOptimizer:
        """The strategy and its options; ``name=None`` keeps the default: ``iterative`` with a
        reasoning model, else ``auto`` (reasoning-free). Several names (``"instructions,fewshot,
        iterative"``) run as phases in that order on one budget (``sequence``)."""
        if name is not None:
            name, options = sequence_setting(name, options)
            get_registry().strategy(name)
        return self._set(strategy=name or "", strategy_options=options)

    def set_reasoning_template(self, name: str, text: str | Path) -> PromptOptimizer:
        """Override reasoning template ``name`` (see ``reasoning.template_names()``)."""
        from reflex.judging.reasoning import template

        template(name)  # unknown names raise, listing the known ones
        body = read_prompt(text, "reasoning template file")
        merged = {**self._config.reasoning_templates, name: body}
        return self._set(reasoning_templates=merged)

    def set_budget(
        self,
        preset: BudgetPreset | None = None,
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
        room for the final test evaluation, estimated from the baseline's measurement.
        ``preset`` (``"light"``, ``"medium"``, ``"heavy"``): ``max_calls`` sized to the splits and
        the strategy when the run starts (:mod:`reflex.run.presets`); ``max_calls`` wins."""
        try:  # validated on its own, so an error names the argument (max_calls=0), not budget.
            budget = BudgetConfig(
                preset=preset,
                max_calls=max_calls,
                max_reasoning_calls=max_reasoning_calls,
                max_total_calls=max_total_calls,
                max_cost=max_cost,
                max_seconds=max_seconds,
            )
        except ValidationError as exc:
            raise ConfigurationError(validation_message(exc)) from None
        return self._set(budget=budget)

    def configure(self, **settings: Any) -> PromptOptimizer:
        """Set any RunConfig field by name (seed, max_iterations, max_workers, run_dir, ...)."""
        unknown = set(settings) - set(RunConfig.model_fields)
        if unknown:
            raise ConfigurationError(
                f"unknown setting(s) {sorted(unknown)}; known: "
                f"{', '.join(sorted(RunConfig.model_fields))}"
            )
        return self._set(**settings)

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

    def set_max_prompt_tokens(self, tokens: int | None) -> PromptOptimizer:
        """Refuse, at 0 calls, any candidate prompt longer than ``tokens`` (demos included,
        counted in cl100k_base), recorded as rejected with the reason; None: no limit."""
        return self._set(max_prompt_tokens=tokens)

    def set_prompt_token_cost(self, cost: float) -> PromptOptimizer:
        """Make length a cost: a candidate must gain ``cost`` val score per 1,000 prompt tokens
        it adds over the best prompt, on top of the acceptance rule (0: length is free)."""
        return self._set(prompt_token_cost=cost)

    def set_accept(self, rule: str) -> PromptOptimizer:
        """When a candidate replaces the best prompt: ``"any"`` (the default: any higher val
        score; the evidence is recorded all the same), ``"significant"`` (better on the val rows
        by a one-sided paired test at 0.1; ``"significant:0.05"`` another level; the winner
        corrected for best-of-many) or ``"margin:0.02"`` (a mean val gain of at least 0.02)."""
        return self._set(accept=rule)

    def set_race(self, on: bool = True) -> PromptOptimizer:
        """Race a round's candidates on growing val minibatches and drop the clearly worse
        early (a sequential paired test against the leader; docs/selection.md, "Racing")."""
        return self._set(race=on)

    def set_seed(self, seed: int) -> PromptOptimizer:
        return self._set(seed=seed)

    def set_max_iterations(self, n: int) -> PromptOptimizer:
        return self._set(max_iterations=n)

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

    def clone(self) -> PromptOptimizer:
        """An independent copy of this builder (dataset and metric objects are shared)."""
        other = PromptOptimizer()
        other._metrics = list(self._metrics)
        other._config = self._config.model_copy(deep=True)
        other._strategy_named = self._strategy_named
        self._copy_data(other)
        return other

    def build_config(self) -> RunConfig:
        """The validated RunConfig this builder would run with."""
        rows = self._rows()
        if not self._config.models:
            raise ConfigurationError("no task model: call .add_provider('openai', 'gpt-4o-mini')")
        if not self._metrics:
            raise ConfigurationError("no metric: call .add_metric(...) e.g. 'exact_match'")
        self._check_references(self._metrics)
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
        dataset = {"dataset_name": rows.name, "dataset_size": len(rows)}
        return RunConfig.model_validate({**dict(self._config), **dataset})

    def plan(self, prompt: PromptLike) -> PricedPlan:
        """The priced plan of ``run(prompt)``, made at 0 calls (``--dry-run``): every check a run
        makes before its first call, then the rows of each split, the calls, tokens, cost and
        time of each phase and the smallest gain the test split can show (docs/budgets.md)."""
        from reflex.run.start import plan_run

        spec = prompt_spec(prompt)
        self.bind_template(spec)
        config = self.build_config()
        assert self._dataset is not None
        return plan_run(config, self._dataset, self._metrics, spec, pipeline=self._pipeline)

    @overload
    def run(
        self,
        prompt: PromptLike,
        callbacks: Sequence[AnyCallback] = (),
        *,
        resume: bool | str = False,
        dry_run: Literal[False] = False,
    ) -> OptimizationResult: ...

    @overload
    def run(
        self,
        prompt: PromptLike,
        callbacks: Sequence[AnyCallback] = (),
        *,
        resume: bool | str = False,
        dry_run: Literal[True],
    ) -> PricedPlan: ...

    def run(
        self,
        prompt: PromptLike,
        callbacks: Sequence[AnyCallback] = (),
        *,
        resume: bool | str = False,
        dry_run: bool = False,
    ) -> OptimizationResult | PricedPlan:
        """Optimize ``prompt``; returns the result.

        ``prompt``: text, a Path to a prompt file (.md/.txt, or .json/.yaml/.toml components,
        or a directory of .md components), a registry URI (``"prompts:/cat/3"``,
        ``"prompts:/cat@production"``: MLflow's, read with ``MLFLOW_TRACKING_URI``; or
        ``reflex_mlflow.load_prompt(uri, tracking_uri=...)``), a
        :class:`reflex.data.prompts.PromptSpec`, a mapping
        of component names to texts (see :mod:`reflex.data.prompts`), or a chat template: a
        list of ``{"role", "content"}`` messages with ``{{variable}}`` placeholders, each filled
        from the row field of that name (or the one :meth:`set_variables` maps it to). The
        engine optimizes the assembled text; ``result.best_components`` holds the winner's
        components when known.

        ``callbacks``: objects with any subset of the ``on_*`` hooks of :class:`reflex.Callback`
        (subclassing it is optional); one that raises is a warning, never the end of the run.

        ``resume=True`` continues the latest unfinished run for this dataset and prompt in the
        run directory; ``resume="<run id>"`` continues that run. Paid calls are not repeated.

        ``dry_run=True`` returns :meth:`plan`'s :class:`~reflex.run.plan.PricedPlan` instead:
        no call is made and nothing is written.
        """
        from reflex.run.start import start_run

        if dry_run:
            if resume:
                raise ConfigurationError(
                    "a dry run plans a new run: leave resume out (a resumed run replays what "
                    "it paid for from its cache)"
                )
            return self.plan(prompt)

        spec = prompt_spec(prompt)
        self.bind_template(spec)
        config = self.build_config()
        if spec.source:  # read from a registry: the tracker registers the winner beside it
            config = config.model_copy(update={"prompt_source": spec.source})
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
