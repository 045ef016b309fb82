"""What a strategy sees: data, evaluation, reasoning, iteration recording and stop signals."""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any, cast

from pydantic import BaseModel

from reflex.callbacks import EvalLabel
from reflex.checks.leakage import LeakageFlag
from reflex.config import DEFAULT_ITERATIONS
from reflex.data.dataset import Dataset
from reflex.data.prompts import PromptSpec
from reflex.errors import ConfigurationError
from reflex.result import EvalSnapshot, IterationRecord, Outcome
from reflex.run.acceptance import Gate
from reflex.run.budget import Budget
from reflex.run.capabilities import OptIn, offered, verdict
from reflex.run.iteration import Measured, checkpoint_data, new_record
from reflex.run.screening import CandidateScreen, refused_snapshot
from reflex.run.session import Session
from reflex.run.stopping import Stopping, StopSignals
from reflex.types import BudgetView, Capability, CapT, Example, RunSettings

__all__ = ["RunContext"]


class RunContext(OptIn, StopSignals):
    """The engine's side of the Strategy contract: implements ``reflex.types.StrategyContext``.

    ``record_iteration`` measures each candidate on the validation split, keeps it as the best
    prompt when the acceptance gate passes it (:mod:`reflex.run.acceptance`: ``accept``'s rule
    against the incumbent on the same val rows; guard metrics must not regress), applies early
    stopping and the threshold, writes a checkpoint and notifies callbacks.

    On resume the strategy is replayed from the start against the response cache (no paid calls);
    iterations up to the checkpoint are checked against it and not reported twice
    (``reflex.run.replay``).
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
        prompt_spec: PromptSpec | None = None,
        test: Dataset | None = None,
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
        # Reasoning answers unusable even after their retry (see ``fail_proposal``).
        self.failed_proposals: list[dict[str, Any]] = []
        self.best_prompt = initial_prompt
        # The initial prompt as named components; strategies that edit one text ignore it.
        self.prompt_spec = prompt_spec or PromptSpec.single(initial_prompt)
        self.best_components: dict[str, str] | None = dict(self.prompt_spec.components)
        # Leakage (held-out text indexed once) and guard checks of every candidate.
        self._screen = CandidateScreen(
            self.config,
            train=train,
            held_out={"val": val, "test": test or ()},
            seed_texts=[initial_prompt, *self.prompt_spec.components.values()],
            initial_val=initial_val,
            initial_prompt=initial_prompt,
        )
        self._refused: dict[str, str] = {}  # candidates a static guard refuses (no call)
        self.best_val: float | None = initial_val.mean_score if initial_val else None
        self._initial_val = self.best_val
        config = session.config
        self._gate = Gate.for_run(config, val, initial_val, train, initial_prompt)
        self._stopping = Stopping(
            self.settings.max_iterations, config.score_threshold, config.early_stopping_patience
        )
        self._started = time.monotonic()
        self._test_ids = frozenset(e.id for e in (test or ()))
        self._train_batch: list[Example] | None = None  # see ``_train_score``
        session.replay.strategy_starts()

    @functools.cached_property
    def settings(self) -> RunSettings:
        """The settings a strategy may read: a frozen copy of the run's config, made once (it is
        read in every strategy loop, and the config does not change during a run)."""
        config = self.config
        return RunSettings(
            models=tuple(config.models),
            reasoning_model=config.reasoning_model,
            source_model=config.source_model,
            reasoning_templates=MappingProxyType(dict(config.reasoning_templates)),
            # The engine resolved an unset value from the budget; DEFAULT_ITERATIONS otherwise.
            max_iterations=DEFAULT_ITERATIONS
            if config.max_iterations is None
            else config.max_iterations,
            batch_size=config.batch_size,
            seed=config.seed,
            rewrite_messages=None
            if config.rewrite_messages is None
            else tuple(config.rewrite_messages),
            format_names=tuple(self._screen.format_names),
            feedback_field=config.feedback_field,
            race=config.race,
        )

    @property
    def budget(self) -> BudgetView:
        """What is left of the budget now (remaining calls exclude the final-test reserve)."""
        budget: Budget = self._session.budget
        limit = budget.limits.max_calls
        reasoning = budget.ledger.by_role["reasoning"]
        return BudgetView(
            remaining_calls=None
            if limit is None
            else max(0, limit - budget.metric_calls - budget.reserved_calls),
            calls_per_row=self.calls_per_row,
            reasoning_calls=reasoning.calls,
            reasoning_tokens=reasoning.tokens,
            elapsed_s=budget.elapsed,
        )

    @property
    def calls_per_row(self) -> float:
        """Task-model calls one (example, model) evaluation makes, for budget plans: 1.0 for a
        plain run; a pipeline's average so far (1.0 before its first run)."""
        pipeline = self._session.evaluator.pipeline
        if pipeline is None or pipeline.runs == 0:
            return 1.0
        return pipeline.calls / pipeline.runs

    def evaluate(
        self,
        prompt: str,
        examples: Sequence[Example] | None = None,
        label: str = "train",
        *,
        sampling: tuple[float, int] | None = None,
    ) -> EvalSnapshot:
        """Score ``prompt`` on ``examples`` (default: the whole train split); train and val rows
        only: the test split is measured by the engine alone (baseline and final). ``sampling``
        ``(temperature, seed)`` decodes at that temperature and seed instead of the run's."""
        rows = list(self.train) if examples is None else list(examples)
        held = [e.id for e in rows if e.id in self._test_ids]
        if held:
            raise ConfigurationError(
                f"ctx.evaluate: {len(held)} row(s) of the test split (e.g. {held[0]!r}); a "
                "strategy may evaluate train and val rows only"
            )
        split = EvalLabel.at(label, self.iteration + 1)
        refused = self._refusal(prompt)
        if refused is not None:  # no call is paid for a candidate that breaks the template
            return refused_snapshot(prompt, str(split), rows, self.settings.models, refused)
        snapshot = self._session.evaluate(prompt, rows, split, sampling=sampling)
        if sampling is None:  # a candidate looked at on val rows counts in best-of-many
            self._gate.looked(prompt, snapshot)
        return snapshot

    def _refusal(self, prompt: str) -> str | None:
        """Why ``prompt`` breaks the chat template, the tools' fixed lines or the output-format
        instructions (recorded once as a failed proposal, with the guard as its purpose)."""
        if prompt in self._refused:
            return self._refused[prompt]
        refused = self._screen.refusal(prompt)
        if refused is None:
            return None
        guard, reason = refused
        self._refused[prompt] = reason
        self.fail_proposal(guard, reason)
        return reason

    def reason(self, messages: Sequence[Mapping[str, str]] | str) -> str:
        """Ask the reasoning model; a plain string is sent as one user message."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        return self._session.reason(messages)

    def log(self, kind: str, **data: Any) -> None:
        """Append a strategy event to the run's events.jsonl (a ``reasoning_call`` event also
        completes the reasoning call's row of reflections.jsonl with its purpose and outcome)."""
        if kind == "reasoning_call":
            self._session.reflection(iteration=self.iteration + 1, **data)
        self._session.event(kind, iteration=self.iteration, **data)

    def fail_proposal(self, purpose: str, error: str, **data: Any) -> None:
        """Record a reasoning answer that stayed unusable after its retry.

        It lands in ``result.failed_proposals`` (with the iteration it belonged to and the
        phase) and as a ``failed_proposal`` event; the run goes on.
        """
        entry = {"iteration": self.iteration + 1, "phase": self.phase, "purpose": purpose}
        entry.update(error=error, **data)
        self.failed_proposals.append(entry)
        self.log("failed_proposal", **{k: v for k, v in entry.items() if k != "iteration"})

    def capability(self, key: Capability[CapT]) -> CapT:
        """The opt-in part named by ``key``: this context, which implements every one."""
        parts = offered(self)  # mypy checks here that this context implements each protocol
        if key not in parts:
            known = ", ".join(sorted(k.name for k in parts))
            raise ConfigurationError(
                f"no capability {key.name!r}: ask for one of reflex.api's keys ({known})"
            )
        return cast(CapT, parts[key])

    def record_iteration(
        self,
        prompt: str,
        train: EvalSnapshot | None,
        outcome: Outcome | None = None,
        *,
        reasoning: str = "",
        change: float | None = None,
        components: Mapping[str, str] | None = None,
        lineage: Sequence[Mapping[str, Any]] = (),
        race: Mapping[str, Any] | None = None,
        **legacy: Any,
    ) -> IterationRecord:
        """Record one iteration and return it: measured on val unless its ``outcome`` is failed
        or rejected (screened out on train, or it breaks the chat template; the reason is
        recorded; no outcome: accepted if it became the new best on val). ``components``: kept
        as ``best_components`` if it wins. Leakage flags (:mod:`reflex.checks.leakage`) are
        recorded; ``strict_leakage`` rejects them. ``race``: the racing evaluator's facts
        (``IterationRecord.race``). ``legacy``: the deprecated keywords."""
        said = verdict(outcome, legacy)  # here: its DeprecationWarning names the strategy's line
        facts = self._decide(prompt, train, said, change, components)
        record = new_record(
            replace(facts, reasoning=reasoning, lineage=lineage, race=race),
            iteration=self.iteration + 1,
            phase=self.phase,
            total=self._session.client.ledger.total(),
            started=self._started,
        )
        self._log_leakage(record, facts.leakage)
        self.iterations.append(record)
        self._stopping.recorded(facts.is_best, self.best_val)
        self._publish(record)
        return record

    def _decide(
        self,
        prompt: str,
        train: EvalSnapshot | None,
        said: tuple[bool | None, str | None, str | None],
        change: float | None,
        components: Mapping[str, str] | None,
    ) -> Measured:
        """What a candidate measured and the verdict on it: screened before val is paid for (a
        broken template, copied held-out text), measured (:meth:`_measure`), screened again (an
        implausible gain, the guards), then judged (:meth:`_judge`). ``said``: what the strategy
        said, ``(accepted, failed, rejected)`` (:func:`verdict`)."""
        accepted, failed, rejected = said
        rejected = self._refusal(prompt) or rejected  # a broken template: nothing is paid
        leaks = self._screen.span_flags(prompt, failed, rejected)
        rejected = rejected or self._screen.reject(leaks)  # before val is paid for
        measured = train  # what the strategy measured (leakage checks use only that)
        train, val, selection = self._measure(prompt, train, failed is None and rejected is None)
        if val is not None and measured is not None:
            rows = (len(measured.samples), len(val.samples))
            leaks += self._screen.gain(
                measured.mean_score, val.mean_score, self.best_val, change, rows
            )
        rejected = rejected or self._screen.reject(leaks) or self._screen.guard_violation(val)
        is_best, evidence = False, None
        if val is not None:  # measured on val: counted in best-of-many even when rejected
            self._gate.looked(prompt, val)
        if failed is None and rejected is None:
            is_best, evidence = self._judge(prompt, val, selection, components, measured)
        ok = (is_best if accepted is None else accepted) and rejected is None  # never both
        return Measured(
            prompt=prompt,
            train=train,
            val=val,
            reasoning="",  # the strategy's notes (reasoning, lineage, race) come with the record
            accepted=ok,
            change=change,
            failed=failed,
            is_best=is_best,
            evidence=evidence,
            rejected=rejected,
            components=components,
            leakage=leaks,
        )

    def _judge(
        self,
        prompt: str,
        val: EvalSnapshot | None,
        selection: float | None,
        components: Mapping[str, str] | None,
        measured: EvalSnapshot | None,
    ) -> tuple[bool, dict[str, Any] | None]:
        """The acceptance gate's verdict on a candidate that passed every screen (``accept``'s
        rule against the best prompt on the same val rows: :meth:`Gate.judge`), with its
        evidence; a candidate it passes becomes the best prompt (and its ``components``)."""
        is_best, evidence = self._gate.judge(
            self.iteration + 1, val, selection, self.best_val, prompt
        )
        if is_best:
            self.best_prompt, self.best_val = prompt, selection
            self.best_components = self.prompt_spec.components_of(prompt, components)
            self._screen.became_best(measured.mean_score if measured else None)
        return is_best, evidence

    def _measure(
        self, prompt: str, train: EvalSnapshot | None, measured: bool
    ) -> tuple[EvalSnapshot | None, EvalSnapshot | None, float | None]:
        """``(train, val, selection score)`` of a candidate: unless it failed or was rejected
        (``measured`` False), its train score (a minibatch when the strategy gave none) and its
        val evaluation; the selection score is val's mean, or train's when there is no val."""
        if not measured:
            return train, None, None
        if train is None:
            train = self._train_score(prompt)
        if not len(self.val):
            return train, None, train.mean_score if train is not None else None
        val = self._session.evaluate(
            prompt, list(self.val), EvalLabel.at("val", self.iteration + 1)
        )
        return train, val, val.mean_score

    def _train_score(self, prompt: str) -> EvalSnapshot | None:
        """A candidate the strategy did not score on train is measured on a fixed, seeded train
        minibatch (``batch_size`` rows), so every iteration has its train score. Not under a
        metric-call budget (``--max-calls``): there the calls go to the search, and the score
        stays None."""
        if not len(self.train):
            return None
        if self._train_batch is None:
            rows = list(self.train)
            size = min(self.settings.batch_size, len(rows))
            self._train_batch = random.Random(f"train-batch:{self.seed}").sample(rows, size)
        if self.budget.remaining_calls is not None:
            return None  # under --max-calls every call goes to the search (val), none to charts
        label = EvalLabel.at("train", self.iteration + 1)
        return self._session.evaluate(prompt, self._train_batch, label)

    def _log_leakage(self, record: IterationRecord, leaks: Sequence[LeakageFlag]) -> None:
        if leaks:  # session.event skips it while a resumed run replays what it logged
            flags = [flag.to_dict() for flag in leaks]
            self._session.event(
                "leakage", iteration=record.iteration, rejected=record.rejected, flags=flags
            )

    def _publish(self, record: IterationRecord) -> None:
        session = self._session
        if session.replay.iteration_replayed(record):
            return
        session.store.write_prompt(f"iter_{record.iteration:03d}", record.system_prompt)
        session.store.write_json("checkpoint.json", self.checkpoint())
        session.event("iteration", **record.to_dict())
        session.dispatcher.iteration(record)

    def checkpoint(self) -> dict[str, Any]:
        """The state after the latest iteration (written atomically after each iteration)."""
        budget = self._session.budget
        return checkpoint_data(
            iterations=self.iterations,
            phase=self.phase,
            phase_history=self.phase_history,
            best_prompt=self.best_prompt,
            best_val=self.best_val,
            since_best=self._stopping.since_best,
            stop_reason=self.stop_reason,
            stop=self.stop.value if self.stop else None,
            state=self.state,
            ledger=self._session.client.ledger.to_dict(),
            metric_calls=budget.metric_calls,
            elapsed=budget.elapsed,
        )

    def correct_selection(self) -> dict[str, Any] | None:
        """The winner corrected for best-of-many (:meth:`Gate.selection`), once the search is
        over; under ``significant`` a winner that does not survive gives way to the initial
        prompt. None when the initial prompt is still the best."""
        selection = self._gate.selection()
        if selection is None:
            return None
        if not selection["kept"]:
            self.best_prompt, self.best_val = self.initial_prompt, self._initial_val
            self.best_components = dict(self.prompt_spec.components)
        self._session.event("selection", **selection)
        return selection
