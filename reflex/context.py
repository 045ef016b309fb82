"""What a strategy sees: data, evaluation, reasoning, iteration recording and stop signals."""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from reflex.dataset import Dataset
from reflex.result import EvalSnapshot, IterationRecord
from reflex.session import Session
from reflex.types import Example

__all__ = ["StrategyContext"]


class StrategyContext:
    """The engine's side of the Strategy contract.

    ``record_iteration`` measures each candidate on the validation split, keeps the best-on-val
    prompt (ties keep the earlier one), applies early stopping and the threshold, writes a
    checkpoint and notifies callbacks.
    """

    def __init__(
        self,
        session: Session,
        *,
        train: Dataset,
        val: Dataset,
        initial_prompt: str,
        options: BaseModel,
        initial_val: EvalSnapshot | None,
    ) -> None:
        self._session = session
        self.train = train
        self.val = val
        self.initial_prompt = initial_prompt
        self.options = options
        self.config = session.config
        self.seed = session.config.seed
        self.rng = random.Random(session.config.seed)
        self.state: dict[str, Any] = {}
        self.iterations: list[IterationRecord] = []
        self.phase = session.config.strategy
        self.phase_history: list[dict[str, Any]] = []
        self.best_prompt = initial_prompt
        self.best_val: float | None = initial_val.mean_score if initial_val else None
        self._since_best = 0
        self.stop_reason = ""
        self._started = time.monotonic()

    @property
    def max_iterations(self) -> int:
        return self.config.max_iterations

    @property
    def batch_size(self) -> int:
        return self.config.batch_size

    @property
    def iteration(self) -> int:
        """Number of iterations recorded so far."""
        return len(self.iterations)

    @property
    def should_stop(self) -> bool:
        if self.stop_reason:
            return True
        if self.iteration >= self.max_iterations:
            self.stop_reason = f"reached max iterations ({self.max_iterations})"
        return bool(self.stop_reason)

    def begin_phase(self, name: str) -> None:
        """Mark the start of a named phase (e.g. ``auto`` running ``fewshot``); in phase_history."""
        self.phase = name
        self.phase_history.append({"phase": name, "start_iteration": self.iteration + 1})
        self.log("phase", phase=name)

    def evaluate(
        self, prompt: str, examples: Sequence[Example] | None = None, label: str = "train"
    ) -> EvalSnapshot:
        """Score ``prompt`` on ``examples`` (default: the whole train split)."""
        rows = list(self.train) if examples is None else list(examples)
        return self._session.evaluate(prompt, rows, f"{label}:it{self.iteration + 1}")

    def reason(self, messages: Sequence[Mapping[str, str]] | str) -> str:
        """Ask the reasoning model; a plain string is sent as one user message."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        return self._session.reason(messages)

    def log(self, kind: str, **data: Any) -> None:
        """Append a strategy event to the run's events.jsonl."""
        self._session.store.event(kind, iteration=self.iteration, **data)

    def record_iteration(
        self,
        prompt: str,
        train: EvalSnapshot | None,
        *,
        reasoning: str = "",
        accepted: bool = True,
        change: float | None = None,
        failed: str | None = None,
    ) -> IterationRecord:
        """Record one iteration; measures ``prompt`` on val unless the iteration failed."""
        val_score = None
        if failed is None and len(self.val):
            val_score = self._session.evaluate(
                prompt, list(self.val), f"val:it{self.iteration + 1}"
            ).mean_score
        selection = val_score if len(self.val) else (train.mean_score if train else None)
        is_best = (
            failed is None
            and selection is not None
            and (self.best_val is None or selection > self.best_val)
        )
        if is_best:
            self.best_prompt, self.best_val, self._since_best = prompt, selection, 0
        else:
            self._since_best += 1
        record = self._make_record(
            prompt, train, val_score, reasoning, accepted, change, failed, is_best
        )
        self.iterations.append(record)
        self._update_stop()
        self._session.store.write_prompt(f"iter_{record.iteration:03d}", prompt)
        self._session.store.write_json("checkpoint.json", self.checkpoint())
        self._session.store.event("iteration", **record.to_dict())
        self._session.dispatcher.emit("on_iteration", record)
        return record

    def checkpoint(self) -> dict[str, Any]:
        """The resumable state after the latest iteration (written atomically each iteration)."""
        budget = self._session.budget
        return {
            "iteration": self.iteration,
            "phase": self.phase,
            "phase_history": self.phase_history,
            "best_prompt": self.best_prompt,
            "best_val": self.best_val,
            "since_best": self._since_best,
            "stop_reason": self.stop_reason,
            "state": self.state,
            "rng_state": self.rng.getstate(),
            "iterations": [r.to_dict() for r in self.iterations],
            "ledger": self._session.client.ledger.to_dict(),
            "metric_calls": budget.metric_calls,
            "elapsed_s": budget.elapsed,
        }

    def _make_record(
        self,
        prompt: str,
        train: EvalSnapshot | None,
        val_score: float | None,
        reasoning: str,
        accepted: bool,
        change: float | None,
        failed: str | None,
        is_best: bool,
    ) -> IterationRecord:
        total = self._session.client.ledger.total()
        return IterationRecord(
            iteration=self.iteration + 1,
            score=train.mean_score if train else None,
            val_score=val_score,
            scores_by_metric=dict(train.scores_by_metric) if train else {},
            system_prompt=prompt,
            reasoning=reasoning,
            accepted=accepted and failed is None,
            change=change,
            failed=failed,
            is_best=is_best,
            phase=self.phase,
            calls=total.calls,
            tokens=total.tokens,
            cost=total.cost,
            elapsed_s=round(time.monotonic() - self._started, 3),
        )

    def _update_stop(self) -> None:
        threshold = self.config.score_threshold
        if threshold is not None and self.best_val is not None and self.best_val >= threshold:
            self.stop_reason = f"reached score threshold {threshold}"
        patience = self.config.early_stopping_patience
        if patience is not None and self._since_best >= patience:
            self.stop_reason = f"no val improvement in {patience} iterations (early stopping)"
