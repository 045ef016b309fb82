"""The run lifecycle, as small named steps.

on_run_start -> preflight -> baseline (test) -> on_baseline -> strategy iterations (train, val,
best-on-val, early stop, checkpoint, on_iteration) -> final (best-on-val prompt, test) ->
on_final -> paired test -> on_run_end. On any exception: on_run_error(error, partial), re-raise.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from typing import Any

from reflex.callbacks import AnyCallback, CallbackDispatcher
from reflex.checks.audit import annotate, seal_after_run
from reflex.checks.outcome import end_state, unpriced_warning
from reflex.checks.stats import paired_test
from reflex.config import RunConfig
from reflex.data.dataset import Dataset
from reflex.data.pipeline import Pipeline
from reflex.data.prompts import PromptSpec
from reflex.data.splits import Split, split_dataset
from reflex.errors import (
    BudgetExhausted,
    ConfigurationError,
    DegenerateSeedError,
    StorageError,
)
from reflex.models.client import ModelSpec, ProviderClient
from reflex.models.preflight import check_models, judge_specs
from reflex.models.retry import RetryPolicy, error_name
from reflex.models.router import ModelRouter
from reflex.models.runner import LoopRunner
from reflex.models.shared_cache import open_cache
from reflex.plugins import build_options
from reflex.redact import scrub, scrubbed_logs
from reflex.result import OptimizationResult, RunEnd, StopReason
from reflex.run.budget import Budget, requests_and_cost
from reflex.run.context import RunContext
from reflex.run.evaluate import Evaluator, slice_scores
from reflex.run.pipeline_runner import PipelineRunner
from reflex.run.resume import ResumePoint, earlier_retries, logged_evaluations, prompt_hash
from reflex.run.session import Session
from reflex.run.stopping import iteration_limit
from reflex.run.store import RunStore
from reflex.types import Metric, Strategy

__all__ = ["Engine"]

logger = logging.getLogger(__name__)
PREFLIGHT_ROWS = 10


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
        if strategy_cls.requires_reasoning_model and not config.reasoning_model:
            raise ConfigurationError(
                f"strategy {strategy_cls.name!r} needs a reasoning model: pass "
                "--reasoning-model provider/model (builder: .set_reasoning_model(...))"
            )
        self.callbacks = list(callbacks)
        reasoning = [spec] if (spec := self._reasoning_spec()) else []
        tasks = [self._task_spec(m) for m in config.models]
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
        session.replaying = False
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
        result.baseline = session.evaluate(prompt, list(self.split.test), "test:baseline")
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
        result.best_prompt, result.best_score_val = ctx.best_prompt, ctx.best_val
        result.best_score = max((s for s in result.score_trajectory if s is not None), default=None)
        result.best_components = ctx.best_components
        result.lineage = list(ctx.state.get("lineage", []))
        result.final = session.evaluate(
            ctx.best_prompt, list(self.split.test), "test:final", use_reserve=True
        )
        session.notify.final(result.final)
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
        initial_val = None
        if len(self.split.val):
            initial_val = session.evaluate(prompt, list(self.split.val), "val:baseline")
        if not (self.resume and self.resume.checkpoint):  # a later checkpoint stays as it is
            session.store.write_json("checkpoint.json", {"stage": "baseline", "iteration": 0})
        checkpoint = self.resume.checkpoint if self.resume else None
        ctx = RunContext(
            session,
            train=self.split.train,
            val=self.split.val,
            initial_prompt=prompt,
            options=self.options,
            initial_val=initial_val,
            replay=(checkpoint or {}).get("iterations", []),
            prompt_spec=self.prompt_spec,
            test=self.split.test,
        )
        result.iterations = ctx.iterations
        result.failed_proposals = ctx.failed_proposals  # shared, so a partial result has them
        strategy = self.strategy_cls(self.options)
        try:
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
        snap = session.evaluate(prompt, rows, "train:preflight")
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

    def _iteration_limit(self) -> int:
        """``max_iterations``, or (unset) what the ``--max-calls`` search budget pays for."""
        models = len(self.config.models)
        val = len(self.split.val) or len(self.split.train)
        preflight = min(PREFLIGHT_ROWS, len(self.split.train))
        fixed = models * (preflight + 2 * len(self.split.test) + len(self.split.val))
        return iteration_limit(
            self.config.max_iterations,
            self.config.budget.max_metric_calls,
            fixed_calls=fixed,
            val_pass=models * val,
        )

    def _open_session(self, prompt: str) -> Session:
        resume = self.resume
        store = RunStore(self.config.run_dir, run_id=resume.run_id if resume else None)
        config = self.config.model_copy(update={"run_id": store.run_id, "resumed": bool(resume)})
        if resume is None:
            self._write_run_files(store, config, prompt)  # max_iterations as the user set it
        else:
            store.write_json("run.json", {**self._meta(store, prompt), "resumed_at": time.time()})
        config = config.model_copy(update={"max_iterations": self._iteration_limit()})
        cache = open_cache(config.cache_url, store.cache_path)
        urls = (config.api_base, config.reasoning_base_url, config.cache_url)  # never written
        client = ProviderClient(
            max_workers=config.max_workers,
            processes=config.client_processes,
            cache=cache,
            cache_namespace=config.cache_namespace,
            seed=config.seed,
            owner=store.run_id,
            router=ModelRouter(config.router_config) if config.router_config else None,
            prices=config.prices,
            retry=RetryPolicy(progress_window=config.retry_window),
            on_retry=lambda model, attempt, exc, delay, role: session.event(
                "retry",
                model=model,
                role=role,
                attempt=attempt,
                delay=round(delay, 3),
                error=scrub(f"{error_name(exc)}: {exc}", *urls)[:200],
            ),
        )
        evaluator = Evaluator(
            client=client,
            models=[self._task_spec(m) for m in config.models],
            metrics=self.metrics,
            weights=config.metric_weights,
            prompt_mode=config.prompt_mode,
            pipeline=self._pipeline_runner(client, config),
        )
        dispatcher = CallbackDispatcher(
            self.callbacks,
            on_failure=lambda name, hook, exc: store.event(
                "callback_failure", callback=name, hook=hook, error=scrub(str(exc), *urls)
            ),
        )
        if resume is not None:  # the retries of earlier segments are only in events.jsonl
            for role, count in earlier_retries(store.path).items():
                client.ledger.add_retries(role, count)
        budget = Budget(config.budget, client.ledger)
        budget.baseline_rows = len(self.split.test) * len(config.models)
        if resume is not None and resume.checkpoint:
            budget.elapsed_before = float(resume.checkpoint.get("elapsed_s", 0.0))
        # Killed before its first checkpoint: replay what the record holds (see Session).
        logged = logged_evaluations(store.path) if resume and not resume.checkpoint else {}
        session = Session(
            config=config,
            runner=LoopRunner.shared(),
            client=client,
            evaluator=evaluator,
            budget=budget,
            store=store,
            dispatcher=dispatcher,
            reasoning=self._reasoning_spec(),
            replaying=bool(resume and resume.checkpoint) or bool(logged),
            replay_log=logged,
            replaying_log=bool(logged),
            split_of={i: name for name, ids in self.split.ids().items() for i in ids},
        )
        return session

    def _write_run_files(self, store: RunStore, config: RunConfig, prompt: str) -> None:
        store.write_json("config.json", config.model_dump(mode="json"))
        store.write_json("splits.json", self.split.ids())
        store.write_json("run.json", self._meta(store, prompt))
        store.write_prompt("initial", prompt)

    def _meta(self, store: RunStore, prompt: str) -> dict[str, object]:
        return {
            "run_id": store.run_id,
            "pid": os.getpid(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "strategy": self.strategy_cls.name,
            "dataset_name": self.dataset.name,
            "dataset_source": self.dataset.source,
            "dataset_fingerprint": self.dataset.fingerprint(),
            "prompt_sha256": prompt_hash(prompt),
            "reflex_version": _version(),
        }

    def _pipeline_runner(self, client: ProviderClient, config: RunConfig) -> PipelineRunner | None:
        if self.pipeline is None:
            return None
        return PipelineRunner(
            self.pipeline,
            client,
            timeout=config.pipeline_timeout,
            spec=self.prompt_spec,
            trace_metrics=frozenset(config.trace_metrics),
        )

    def _task_spec(self, model: str) -> ModelSpec:
        return ModelSpec(
            model=model,
            api_base=self.config.api_base,
            temperature=self.config.temperature,
            max_tokens=self.config.max_tokens,
            seed=self.config.seed,
        )

    def _reasoning_spec(self) -> ModelSpec | None:
        if not self.config.reasoning_model:
            return None
        return ModelSpec(
            model=self.config.reasoning_model,
            api_base=self.config.reasoning_base_url,
            temperature=self.config.reasoning_temperature,
            seed=self.config.seed,
            timeout=300.0,
        )

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


def _version() -> str:
    from reflex import __version__

    return __version__
