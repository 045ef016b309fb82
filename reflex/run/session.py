"""The run-wide services a strategy's context and the engine share.

One ``Session`` owns the event loop, the provider client (concurrency, cache, retries, ledger),
the evaluator, the budget, the run store and the callback dispatcher. Every evaluation and every
reasoning call of a run goes through it, so each is counted once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from reflex.callbacks import CallbackDispatcher, EvalLabel
from reflex.checks.isolation import EVALUATIONS_FILE, prompt_id_of
from reflex.config import RunConfig
from reflex.errors import ConfigurationError
from reflex.models.client import ModelSpec, ProviderClient
from reflex.models.runner import LoopRunner
from reflex.redact import redact_data
from reflex.result import EvalSnapshot, Example
from reflex.run.budget import Budget
from reflex.run.evaluate import Evaluator, request_for
from reflex.run.replay import Replay
from reflex.run.store import RunStore

__all__ = ["Session"]

T = TypeVar("T")

_MUTED = CallbackDispatcher(())  # what a replaying session notifies: nobody


@dataclass
class Session:
    config: RunConfig
    runner: LoopRunner
    client: ProviderClient
    evaluator: Evaluator
    budget: Budget
    store: RunStore
    dispatcher: CallbackDispatcher
    reasoning: ModelSpec | None = None
    # A resumed run's replay (reflex.run.replay): while active, nothing is logged or notified.
    replay: Replay = field(default_factory=Replay)
    # Example id -> the split it belongs to, so each evaluations.jsonl row names its true split.
    split_of: Mapping[str, str] = field(default_factory=dict)
    # The latest reasoning call, until its purpose and parse outcome are known (``reflection``).
    _pending: dict[str, Any] | None = None

    def event(self, kind: str, **data: Any) -> None:
        """Append to events.jsonl, except while a resumed run replays what it already logged."""
        if not self.replay.active:
            self.store.event(kind, **data)

    @property
    def notify(self) -> CallbackDispatcher:
        """The callbacks, muted while a resumed run replays what they were already told."""
        return _MUTED if self.replay.active else self.dispatcher

    def sampled(self, sampling: tuple[float, int] | None) -> Evaluator:
        """The evaluator decoding at ``(temperature, seed)`` instead of the run's settings (both
        are part of each call's cache key: a resumed run replays the same samples)."""
        if sampling is None:
            return self.evaluator
        temperature, seed = sampling
        specs = [replace(s, temperature=temperature, seed=seed) for s in self.evaluator.models]
        return replace(self.evaluator, models=specs)

    def uncached_calls(
        self,
        prompt: str,
        examples: Sequence[Example],
        *,
        sampling: tuple[float, int] | None = None,
    ) -> int:
        """How many (example, model) calls an evaluation would pay for (cache probes only).

        A pipeline's calls cannot be probed before it runs: they are estimated from the
        pipeline's average so far, and the calls it really made are counted afterwards.
        """
        evaluator = self.sampled(sampling)
        if evaluator.pipeline is not None:
            rows = len(examples) * len(evaluator.models)
            return evaluator.pipeline.estimate_calls(rows)
        mode = evaluator.prompt_mode
        return sum(
            self.client.would_pay(*request_for(spec, prompt, example, mode))
            for spec in evaluator.models
            for example in examples
        )

    def evaluate(
        self,
        prompt: str,
        examples: Sequence[Example],
        label: EvalLabel,
        *,
        use_reserve: bool = False,
        sampling: tuple[float, int] | None = None,
    ) -> EvalSnapshot:
        """Evaluate ``prompt`` on ``examples`` after checking the budget; emits progress.
        ``sampling``: decode at ``(temperature, seed)`` instead of the run's settings."""
        evaluator = self.sampled(sampling)
        if not examples:
            raise ConfigurationError(f"cannot evaluate on an empty set of examples ({label})")
        rows = {(e.id, spec.model) for e in examples for spec in self.evaluator.models}
        self.replay.evaluation_starts(str(label), prompt_id_of(prompt), rows)
        needed = self.uncached_calls(prompt, examples, sampling=sampling)
        self.budget.check_evaluation(needed, use_reserve=use_reserve)
        total = len(examples) * len(self.evaluator.models)
        self.notify.evaluation_start(label, total)
        before = self.client.ledger.by_role["task"].calls
        clock = self.budget.elapsed
        try:
            snapshot = self.run_in_budget(
                evaluator.evaluate(prompt, examples, label.split, progress=self._advance),
                use_reserve=use_reserve,
            )
        finally:  # calls paid before a deadline cancelled the rest still count
            self.budget.metric_calls += self.client.ledger.by_role["task"].calls - before
        self.budget.pace = (total, self.budget.elapsed - clock)  # what a time message can cite
        self._log_rows(prompt, str(label), snapshot)
        self.event(
            "evaluation",
            label=str(label),
            examples=len(examples),
            calls=needed,
            mean_score=snapshot.mean_score,
            errors=snapshot.n_errors,
        )
        self.notify.evaluation_end(label, snapshot)
        self.replay.evaluation_ended()
        return snapshot

    def _log_rows(self, prompt: str, label: str, snapshot: EvalSnapshot) -> None:
        """One evaluations.jsonl row per sample (secrets redacted), except while replaying."""
        if self.replay.active:
            return
        prompt_id = prompt_id_of(prompt)
        urls = (self.config.api_base, self.config.reasoning_base_url)
        rows = [
            {
                "split": self.split_of.get(s.example_id, "?"),
                "label": label,
                "prompt_id": prompt_id,
                "example_id": s.example_id,
                "model": s.model,
                "output": s.output,
                "score": s.score,
                "error": s.error,
                "cached": s.cached,
            }
            for s in snapshot.samples
        ]
        rows = redact_data({"rows": rows}, *urls)["rows"]  # the secrets are looked up once
        self.store.append(EVALUATIONS_FILE, rows)

    def _advance(self, n: int) -> None:
        # Called on the loop thread; progress callbacks must be cheap and thread-safe.
        self.notify.evaluation_advance(n)

    def reason(self, messages: Sequence[Mapping[str, str]]) -> str:
        """One reasoning-model call (budget-checked, cached, counted under 'reasoning')."""
        if self.reasoning is None:
            raise ConfigurationError(
                f"strategy {self.config.strategy!r} needs a reasoning model: pass "
                "--reasoning-model provider/model (or .set_reasoning_model(...))"
            )
        self.budget.check_reasoning()
        completion = self.run_in_budget(
            self.client.complete(self.reasoning, messages, role="reasoning")
        )
        self.event(
            "reasoning",
            cached=completion.cached,
            tokens=completion.prompt_tokens + completion.completion_tokens,
        )
        self.reflection()  # the previous call's outcome was never told: write it as it is
        self._pending = {
            "request": [dict(m) for m in messages],
            "answer": completion.text,
            "cached": completion.cached,
        }
        return completion.text

    def reflection(self, **outcome: Any) -> None:
        """Write the latest reasoning call to reflections.jsonl with ``outcome`` (``purpose``,
        ``attempt``, ``outcome``: ok / unusable, ``error``); purpose and outcome are null when
        the strategy did not say (it called the model without ``ask``)."""
        row, self._pending = self._pending, None
        if row is None or self.replay.active:
            return
        row = {"purpose": None, "outcome": None, **outcome, **row}
        urls = (self.config.api_base, self.config.reasoning_base_url)
        self.store.append("reflections.jsonl", [redact_data(row, *urls)])

    def run_in_budget(self, coro: Coroutine[Any, None, T], *, use_reserve: bool = False) -> T:
        """Run ``coro`` on the run's loop, ended by the time budget: at its deadline (see
        ``Budget.seconds_left``) the calls still in flight are cancelled and BudgetExhausted is
        raised, so a stuck call cannot keep the run from its final measurement."""
        left = self.budget.seconds_left(use_reserve=use_reserve)
        if left is None:
            return self.runner.run(coro)
        budget = self.budget
        # A retry that would wait past this deadline ends the step at once (models.client).
        self.client.time_left = lambda: budget.seconds_left(use_reserve=use_reserve)
        try:
            return self.runner.run(_within(coro, max(left, 0.0), budget, use_reserve))
        finally:
            self.client.time_left = None

    def close(self) -> None:
        if self.client.cache is not None:
            self.client.cache.close()


async def _within(
    coro: Coroutine[Any, None, T], seconds: float, budget: Budget, use_reserve: bool
) -> T:
    """``coro``, cancelled with its calls after ``seconds`` (then BudgetExhausted)."""
    task = asyncio.ensure_future(coro)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    except asyncio.CancelledError:  # Ctrl-C: cancel the calls too, as the caller expects
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise
    if done:
        return task.result()
    task.cancel()  # the deadline: cancel the calls still in flight and wait until they are
    await asyncio.gather(task, return_exceptions=True)
    raise budget.time_exhausted(use_reserve=use_reserve)
