"""Opening a run: its record on disk, and the session (client, evaluator, budget, trackers) the
lifecycle in reflex.run.engine works through. A resumed run reopens its record and carries the
time and retries of its earlier segments."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from reflex.callbacks import AnyCallback, CallbackDispatcher
from reflex.config import BudgetConfig, RunConfig
from reflex.data.dataset import Dataset
from reflex.data.files import output_problem
from reflex.data.pipeline import Pipeline
from reflex.data.prompts import PromptSpec
from reflex.data.splits import Split
from reflex.errors import ConfigurationError
from reflex.models.cache import ResponseCache
from reflex.models.client import ClientSettings, ModelSpec, ProviderClient
from reflex.models.retry import RetryPolicy, error_name
from reflex.models.router import ModelRouter
from reflex.models.runner import LoopRunner
from reflex.models.shared_cache import check_cache_url, open_cache
from reflex.redact import scrub
from reflex.run.budget import Budget
from reflex.run.evaluate import Evaluator, task_spec
from reflex.run.pipeline_runner import PipelineRunner
from reflex.run.replay import CallReplay, Replay
from reflex.run.resume import ResumePoint, earlier_retries, prompt_hash
from reflex.run.session import Session
from reflex.run.split_check import split_record
from reflex.run.store import RunStore
from reflex.types import Metric

__all__ = ["RunPlan", "check_cache_file", "reasoning_spec", "task_spec"]


def check_cache_file(url: str | None) -> None:
    """Refuse, before any call or write, a ``sqlite:///`` cache URL naming a FIFO, a device, a
    socket or a directory: sqlite would fail on it mid-run with a bare "disk I/O error"."""
    if not url:
        return
    check_cache_url(url)  # the URL's form: one line, before anything is made
    if not url.lower().startswith("sqlite:///"):
        return
    path = url.partition(":///")[2]
    what = f"--cache-url {url}: the sqlite file {path}"
    problem = output_problem(Path(path), what) if path else None
    if problem is None and path and Path(path).is_dir():
        problem = f"{what} is a directory"
    if problem is not None:
        raise ConfigurationError(f"{problem}; name a regular file (or leave --cache-url out)")


def reasoning_spec(config: RunConfig) -> ModelSpec | None:
    """How the reasoning model is called (None: a reasoning-free run)."""
    if not config.reasoning_model:
        return None
    return ModelSpec(
        model=config.reasoning_model,
        api_base=config.reasoning_base_url,
        temperature=config.reasoning_temperature,
        seed=config.seed,
        timeout=300.0,
    )


@dataclass
class RunPlan:
    """What a run was built with, before any call: enough to open (or reopen) its session."""

    config: RunConfig
    dataset: Dataset
    split: Split
    metrics: Sequence[Metric]
    strategy_name: str
    callbacks: Sequence[AnyCallback] = ()
    resume: ResumePoint | None = None
    prompt_spec: PromptSpec | None = None
    pipeline: Pipeline | None = None

    def open_session(
        self, prompt: str, max_iterations: int, limits: BudgetConfig | None = None
    ) -> Session:
        """The run's record on disk (new, or reopened on resume) and its session; ``limits``:
        the budget as resolved (a ``--budget`` preset's calls), config.json keeps the user's."""
        # The cache first: one that cannot be opened (an unreachable server) leaves no run
        # folder behind for ``runs`` to list as interrupted.
        if self.config.cache_url is None:  # the sqlite cache's folder, with the run mode
            RunStore.make_root(self.config.run_dir, shared=self.config.shared_run_dir)
        cache = open_cache(self.config.cache_url, Path(self.config.run_dir) / "cache.sqlite")
        try:
            return self._session(cache, prompt, max_iterations, limits or self.config.budget)
        except BaseException:
            cache.close()
            raise

    def _session(
        self, cache: ResponseCache, prompt: str, max_iterations: int, limits: BudgetConfig
    ) -> Session:
        resume = self.resume
        store = RunStore(
            self.config.run_dir,
            run_id=resume.run_id if resume else None,
            shared=self.config.shared_run_dir,
        )
        config = self.config.model_copy(update={"run_id": store.run_id, "resumed": bool(resume)})
        if resume is None:
            self._write_run_files(store, config, prompt)  # max_iterations as the user set it
        else:
            store.write_json("run.json", {**self.meta(store, prompt), "resumed_at": time.time()})
        config = config.model_copy(update={"max_iterations": max_iterations, "budget": limits})
        urls = (config.api_base, config.reasoning_base_url, config.cache_url)  # never written
        # What a resumed run replays, and which cache rows it paid for (reflex.run.replay).
        replay = (
            Replay.resuming(store, store.run_id, resume.checkpoint)
            if resume is not None
            else Replay(CallReplay(store.run_id))
        )
        client = _client(
            config, cache, replay.calls, urls, lambda **fields: session.event("retry", **fields)
        )
        dispatcher = CallbackDispatcher(
            self.callbacks,
            on_failure=lambda name, hook, exc: store.event(
                "callback_failure", callback=name, hook=hook, error=scrub(str(exc), *urls)
            ),
            on_summary=lambda name, failures, hooks: store.event(
                "callback_failures", callback=name, failures=failures, hooks=hooks
            ),
        )
        if resume is not None:  # the retries of earlier segments are only in events.jsonl
            for role, count in earlier_retries(store.path).items():
                client.ledger.add_retries(role, count)
        budget = Budget(config.budget, client.ledger)
        budget.baseline_rows = len(self.split.test) * len(config.models)
        if resume is not None and resume.checkpoint:
            budget.elapsed_before = float(resume.checkpoint.get("elapsed_s", 0.0))
        session = Session(
            config=config,
            runner=LoopRunner.shared(),
            client=client,
            evaluator=self._evaluator(client, config),
            budget=budget,
            store=store,
            dispatcher=dispatcher,
            reasoning=reasoning_spec(config),
            replay=replay,
            split_of={i: name for name, ids in self.split.ids().items() for i in ids},
        )
        return session

    def meta(self, store: RunStore, prompt: str) -> dict[str, object]:
        """run.json: what ran, on which data, from which prompt, by which version."""
        return {
            "run_id": store.run_id,
            "pid": os.getpid(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "strategy": self.strategy_name,
            "dataset_name": self.dataset.name,
            "dataset_source": self.dataset.source,
            "dataset_fingerprint": self.dataset.fingerprint(),
            "prompt_sha256": prompt_hash(prompt),
            "splits": split_record(self.split.ids()),  # what a resume checks splits.json with
            "reflex_version": _version(),
        }

    def _write_run_files(self, store: RunStore, config: RunConfig, prompt: str) -> None:
        store.write_json("config.json", config.model_dump(mode="json"))
        store.write_json("splits.json", self.split.ids())
        store.write_json("run.json", self.meta(store, prompt))
        store.write_prompt("initial", prompt)

    def _evaluator(self, client: ProviderClient, config: RunConfig) -> Evaluator:
        runner = None
        if self.pipeline is not None:
            runner = PipelineRunner(
                self.pipeline,
                client,
                timeout=config.pipeline_timeout,
                spec=self.prompt_spec,
                trace_metrics=frozenset(config.trace_metrics),
            )
        return Evaluator(
            client=client,
            models=[task_spec(config, m) for m in config.models],
            metrics=list(self.metrics),
            weights=config.metric_weights,
            prompt_mode=config.prompt_mode,
            pipeline=runner,
        )


def _client(
    config: RunConfig,
    cache: ResponseCache,
    replay: CallReplay,
    urls: Sequence[str | None],
    on_retry: Callable[..., None],
) -> ProviderClient:
    """The provider client: its cache, router, prices, and each retry logged as an event."""

    def retried(model: str, attempt: int, exc: BaseException, delay: float, role: str) -> None:
        error = scrub(f"{error_name(exc)}: {exc}", *urls)[:200]
        on_retry(model=model, role=role, attempt=attempt, delay=round(delay, 3), error=error)

    return ProviderClient(
        ClientSettings(
            max_workers=config.max_workers,
            processes=config.client_processes,
            local_workers=config.local_workers,
            local_batch=config.local_batch,
            cache_namespace=config.cache_namespace,
            seed=config.seed,
            prices=config.prices,
            retry=RetryPolicy(progress_window=config.retry_window),
            max_response_mb=config.max_response_mb,
        ),
        cache=cache,
        replay=replay,
        router=ModelRouter(config.router_config) if config.router_config else None,
        on_retry=retried,
    )


def _version() -> str:
    from reflex.result import VERSION

    return VERSION
