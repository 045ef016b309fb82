"""The run lifecycle, as small named steps.

on_run_start -> preflight -> baseline (test) -> on_baseline -> strategy iterations (train, val,
best-on-val, early stop, checkpoint, on_iteration) -> final (best-on-val prompt, test) ->
on_final -> paired test -> on_run_end. On any exception: on_run_error(error, partial), re-raise.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from reflex.callbacks import INITIAL_VAL_LABEL, AnyCallback, EvalLabel
from reflex.checks.audit import annotate, seal_after_run
from reflex.checks.confusion import label_set
from reflex.checks.outcome import end_state, unpriced_warning
from reflex.checks.stats import paired_test
from reflex.checks.trivial import snapshot_check
from reflex.config import RunConfig
from reflex.data.dataset import Dataset, check_feedback_field
from reflex.data.pipeline import Pipeline
from reflex.data.prompts import PromptSpec
from reflex.data.splits import Split, split_dataset
from reflex.data.templates import row_fields
from reflex.errors import (
    BudgetExhausted,
    ConfigurationError,
    DegenerateSeedError,
    StorageError,
)
from reflex.models.preflight import check_models, judge_specs
from reflex.plugins import build_options
from reflex.redact import scrub, scrubbed_logs
from reflex.result import EvalSnapshot, OptimizationResult, RunEnd, StopReason
from reflex.run.budget import requests_and_cost
from reflex.run.context import RunContext
from reflex.run.evaluate import slice_scores
from reflex.run.opening import RunPlan, check_cache_file, reasoning_spec, task_spec
from reflex.run.presets import (
    PREFLIGHT_ROWS,
    fixed_calls,
    mipro_round,
    preset_limits,
    resolve_preset,
)
from reflex.run.resume import ResumePoint
from reflex.run.session import Session
from reflex.run.stopping import iteration_limit
from reflex.types import Metric, Strategy

__all__ = ["Engine"]

logger = logging.getLogger(__name__)


class Engine:
    """Runs one optimization. Build it through PromptOptimizer; ``run`` is the lifecycle."""

    def __init__(
        self,
        config: RunConfig,
        dataset: Dataset,
        metrics: Sequence[Metric],
        strategy_cls: type[Strategy[Any]],
        callbacks: Sequence[AnyCallback] = (),
        resume: ResumePoint | None = None,
        prompt_spec: PromptSpec | None = None,
        pipeline: Pipeline | None = None,
    ) -> None:
        self.config = config
        self.prompt_spec = prompt_spec  # the prompt as named components (reflex.data.prompts)
        self.pipeline = pipeline  # pipeline mode (reflex.data.pipeline): replaces the task call
        self.resume = resume
        self.dataset = dataset
        self.metrics = list(metrics)
        self.strategy_cls = strategy_cls
        self.options = build_options(strategy_cls, dict(config.strategy_options))
        check_cache_file(config.cache_url)  # before any call or write
        if strategy_cls.requires_reasoning_model and not config.reasoning_model:
            raise ConfigurationError(
                f"strategy {strategy_cls.name!r} needs a reasoning model: pass "
                "--reasoning-model provider/model (builder: .set_reasoning_model(...))"
            )
        self.callbacks = list(callbacks)
        reasoning = [spec] if (spec := reasoning_spec(config)) else []
        tasks = [task_spec(config, m) for m in config.models]
        specs = [*tasks, *reasoning, *judge_specs(self.metrics)]
        check_models(specs, config.router_config)  # before any call
        if resume is not None:
            self.split: Split = Split.from_ids(dataset, resume.split_ids)
        else:
            self.split = split_dataset(
                dataset,
                train=config.train_split,
                val=config.val_split,
                seed=config.seed,
                group_key=config.group_key,
            )
        if config.feedback_field is not None:  # before any call: a column the train rows have
            template = prompt_spec if prompt_spec is not None and prompt_spec.variables else None
            filled = (
                row_fields(template.variables, template.names, config.variables)
                if template is not None
                else {}
            )
            check_feedback_field(self.split.train, config.feedback_field, filled)
        # --budget: the preset's calls for these splits (an explicit --max-calls wins).
        sizes = self._split_sizes()
        self.preset = resolve_preset(config, **sizes)
        self.limits = preset_limits(config.budget, self.preset)

    def run(self, prompt: str) -> OptimizationResult:
        """The run, with every log record and warning of the process scrubbed of its secrets
        while it goes (a warning may quote a model's answer; the CLI does the same)."""
        with scrubbed_logs(self.config.api_base, self.config.reasoning_base_url):
            return self._run(prompt)

    def _run(self, prompt: str) -> OptimizationResult:
        session = self._open_session(prompt)
        result = OptimizationResult(
            best_prompt=prompt,
            best_score=None,
            baseline=None,
            final=None,
            initial_prompt=prompt,
            strategy=self.strategy_cls.name,
            run_id=session.store.run_id,
            run_dir=str(session.store.path),
            split_sizes=self._split_sizes(),
        )
        started = time.monotonic()
        try:
            self._lifecycle(session, prompt, result)
            self._finish(session, result, started)  # a failed write is a failed run, not success
        except BaseException as exc:
            self._fail(session, result, started, exc)
            raise
        finally:
            session.close()
        session.dispatcher.run_end(result)
        seal_after_run(session.store.path)  # last: after every event of the run is written
        urls = (self.config.api_base, self.config.reasoning_base_url)
        for warning in result.warnings:  # the Python API says it too, not only the record
            if warning["kind"] in ("no_candidate", "unpriced_calls"):
                logger.warning("%s", scrub(warning["message"], *urls))
        return result

    def _fail(
        self, session: Session, result: OptimizationResult, started: float, exc: BaseException
    ) -> None:
        """Record the failure where it can be, then close the trackers (on_run_error)."""
        if isinstance(exc, KeyboardInterrupt):
            result.stop_reason = "interrupted: KeyboardInterrupt (Ctrl-C)"
            result.stop = StopReason.INTERRUPTED
        error = scrub(
            f"{type(exc).__name__}: {exc}", self.config.api_base, self.config.reasoning_base_url
        )
        if not result.stop_reason:  # the loop had not ended: this exception ended it
            result.stop_reason = f"error: {error}"
            result.stop = (
                StopReason.BUDGET if isinstance(exc, BudgetExhausted) else StopReason.ERROR
            )
        result.completed, result.end_state = False, _end_state(exc)
        session.replay.abandon()
        try:  # a full or read-only disk must not keep the trackers from being closed
            self._finish(session, result, started)
            session.store.event("run_error", error=error)
        except StorageError as write_error:
            logger.warning("could not record the failed run: %s", write_error)
        session.dispatcher.run_error(exc, result)
        seal_after_run(session.store.path)
        if isinstance(exc, BudgetExhausted) and exc.partial is None:
            exc.partial = result

    def _lifecycle(self, session: Session, prompt: str, result: OptimizationResult) -> None:
        session.dispatcher.run_start(session.config, prompt)
        self._preflight(session, prompt)
        requests, cost, judged = requests_and_cost(session.client.ledger)
        paid, clock = session.budget.metric_calls, session.budget.elapsed
        result.baseline = session.evaluate(
            prompt, list(self.split.test), EvalLabel("test", "baseline")
        )
        # Also on resume: a tracker may have lost it with the killed process (they dedupe).
        session.dispatcher.baseline(result.baseline)
        after_requests, after_cost, after_judged = requests_and_cost(session.client.ledger)
        seconds = session.budget.reserve_final(
            rows=len(self.split.test) * len(self.config.models),
            requests=after_requests - requests,
            cost=after_cost - cost,
            judged=after_judged - judged,
            seconds=session.budget.elapsed - clock,
            paid=session.budget.metric_calls - paid,
        )
        if seconds is not None:
            session.event("time_reserve", seconds=float(f"{seconds:.4g}"))  # never a false 0
        ctx = self._optimize(session, prompt, result)
        result.selection = ctx.correct_selection()  # best-of-many: may give back the initial
        result.best_prompt, result.best_score_val = ctx.best_prompt, ctx.best_val
        result.best_score = max((s for s in result.score_trajectory if s is not None), default=None)
        result.best_components = ctx.best_components
        result.lineage = [entry for record in ctx.iterations for entry in record.lineage]
        result.final = session.evaluate(
            ctx.best_prompt, list(self.split.test), EvalLabel("test", "final"), use_reserve=True
        )
        session.notify.final(result.final)
        result.label_check = self._label_check(result.final)
        before, after = result.baseline.per_example(), result.final.per_example()
        if before.keys() & after.keys():  # else no row was scored under both: no paired test
            test = paired_test(before, after, seed=self.config.seed)
            result.p_value, result.significance = test.p_value, test.to_dict()
        if self.config.slice_by:
            result.slices = slice_scores(
                self.dataset, result.baseline, result.final, self.config.slice_by
            )
        result.end_state = end_state(result)  # succeeded, paused on a budget, or no candidate
        result.completed = result.end_state is RunEnd.SUCCEEDED

    def _optimize(self, session: Session, prompt: str, result: OptimizationResult) -> RunContext:
        initial_val, spent = None, None
        try:  # a budget spent here stops the search before it starts: the final still runs
            if len(self.split.val):
                initial_val = session.evaluate(prompt, list(self.split.val), INITIAL_VAL_LABEL)
        except BudgetExhausted as exc:
            spent = exc
        if not (self.resume and self.resume.checkpoint):  # a later checkpoint stays as it is
            session.store.write_json("checkpoint.json", {"stage": "baseline", "iteration": 0})
        ctx = RunContext(
            session,
            train=self.split.train,
            val=self.split.val,
            initial_prompt=prompt,
            options=self.options,
            initial_val=initial_val,
            prompt_spec=self.prompt_spec,
            test=self.split.test,
        )
        result.iterations = ctx.iterations
        result.failed_proposals = ctx.failed_proposals  # shared, so a partial result has them
        strategy = self.strategy_cls(self.options)
        try:
            if spent is not None:
                raise spent
            strategy.optimize(ctx)
            if ctx.stop is None:
                ctx.stop_with(StopReason.STRATEGY_FINISHED, "strategy finished")
        except BudgetExhausted as exc:
            ctx.stop_with(StopReason.BUDGET, f"budget exhausted: {exc.reason}")
            session.event("budget_exhausted", reason=exc.reason)
        finally:
            session.reflection()  # a reasoning call whose outcome the strategy never told
        result.stop_reason, result.stop = ctx.stop_reason, ctx.stop
        result.phase_history = ctx.phase_history or [{"phase": ctx.phase, "start_iteration": 1}]
        return ctx

    def _preflight(self, session: Session, prompt: str) -> None:
        rows = list(self.split.train)[:PREFLIGHT_ROWS]
        snap = session.evaluate(prompt, rows, EvalLabel("train", "preflight"))
        scored = [s for s in snap.samples if s.score is not None]
        errored = snap.n_errors == len(snap.samples)
        all_worst = (
            bool(scored)
            and len(scored) == len(snap.samples)
            and all(s.score == 0.0 for s in scored)
        )
        if not (errored or all_worst) or self.config.allow_degenerate_seed:
            return
        if all_worst and not errored and self.strategy_cls.derives_from_data:
            # Data-derived strategies (label sets, formats, demos) do not learn from the seed's
            # outputs, so a zero-scoring seed still leaves them something to do.
            logger.warning(
                "the starting prompt scores 0 on every preflight row; continuing "
                "because strategy %r derives its candidates from the data",
                self.strategy_cls.name,
            )
            session.event("degenerate_seed", rows=len(snap.samples), refused=False)
            return
        shown = "; ".join(
            f"{s.example_id}: got {s.output[:40]!r}" + (f" ({s.error})" if s.error else "")
            for s in snap.samples[:3]
        )
        more = len(snap.samples) - 3
        shown += f"; and {more} more like them" if more > 0 else ""
        what = "errors on" if errored else "scores 0 on"
        urls = (self.config.api_base, self.config.reasoning_base_url)
        raise DegenerateSeedError(
            scrub(
                f"the starting prompt {what} all {len(snap.samples)} preflight train rows "
                f"({shown}); there is no signal to optimize from: fix the prompt, the metric or "
                "the model, or run anyway with --allow-degenerate-seed (Python: "
                ".set_allow_degenerate_seed())",
                *urls,
            )
        )

    def planned_iterations(self) -> int:
        """``max_iterations``, or (unset) what the ``--max-calls`` search budget pays for."""
        models = len(self.config.models)
        val = len(self.split.val) or len(self.split.train)
        raced = self.config.race and bool(len(self.split.val))
        rounds = mipro_round(
            self.config.strategy, self.config.strategy_options, val=val, raced=raced
        )
        return iteration_limit(
            self.config.max_iterations,
            self.limits.max_calls,
            fixed_calls=fixed_calls(models, **self._split_sizes()),
            val_pass=models * val if rounds is None else rounds.calls(models),
            raced=raced and rounds is None,
            per_candidate=1 if rounds is None else rounds.iterations,
        )

    def _open_session(self, prompt: str) -> Session:
        plan = RunPlan(
            config=self.config,
            dataset=self.dataset,
            split=self.split,
            metrics=self.metrics,
            strategy_name=self.strategy_cls.name,
            callbacks=self.callbacks,
            resume=self.resume,
            prompt_spec=self.prompt_spec,
            pipeline=self.pipeline,
        )
        session = plan.open_session(prompt, self.planned_iterations(), self.limits)
        if self.preset is not None:
            given = self.config.budget.max_calls
            session.event(
                "budget_preset",
                preset=self.preset.preset,
                calls=self.preset.calls,
                formula=self.preset.formula(),
                max_calls=self.limits.max_calls,
                overridden=given is not None,
            )
        return session

    def _label_check(self, final: EvalSnapshot) -> dict[str, Any] | None:
        """On a label task, the winner's test answers against the constant answer and the
        label prior (:mod:`reflex.checks.trivial`); None otherwise."""
        labels = label_set(e.ideal for e in self.dataset)
        if not labels:
            return None
        references = {e.id: e.ideal for e in self.split.test}
        return snapshot_check(references, labels, final.samples)

    def _split_sizes(self) -> dict[str, int]:
        return {
            "train": len(self.split.train),
            "val": len(self.split.val),
            "test": len(self.split.test),
        }

    def _finish(self, session: Session, result: OptimizationResult, started: float) -> None:
        result.elapsed_s = round(session.budget.elapsed, 3)
        result.usage = {
            **session.client.ledger.to_dict(),
            "metric_calls": session.budget.metric_calls,
        }
        annotate(result, self.dataset.source, self.config.overfit_gap)
        result.warnings += unpriced_warning(result.usage, self.config.budget.max_cost)
        session.store.write_prompt("best", result.best_prompt)
        session.store.write_json("result.json", result.to_dict())


def _end_state(exc: BaseException) -> RunEnd:
    if isinstance(exc, KeyboardInterrupt):
        return RunEnd.INTERRUPTED
    return RunEnd.BUDGET_STOPPED if isinstance(exc, BudgetExhausted) else RunEnd.FAILED
