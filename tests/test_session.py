"""A run's session (reflex.run.session): evaluations and reasoning calls logged, counted and
told once, nothing logged or told while a resumed run replays, and the time budget's deadline.
Sessions are opened as a run opens them (reflex.run.opening), on the fake model."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import BETTER

from reflex.callbacks import EvalLabel
from reflex.checks.isolation import prompt_id_of
from reflex.errors import BudgetExhausted, ConfigurationError
from reflex.result import EvalSnapshot
from reflex.run.opening import RunPlan
from reflex.run.replay import CallReplay, Replay
from reflex.run.session import Session
from reflex.testing import FakeModel
from reflex.testing.endpoint import serve
from tests.test_opening import PROMPT, config_for, plan_for

VAL = EvalLabel("val", "baseline")


class Told:
    """The evaluation hooks a callback is told, in order."""

    def __init__(self) -> None:
        self.hooks: list[tuple[str, str]] = []
        self.advanced = 0

    def on_evaluation_start(self, label: EvalLabel, total: int) -> None:
        self.hooks.append(("start", str(label)))

    def on_evaluation_advance(self, n: int) -> None:
        self.advanced += n

    def on_evaluation_end(self, label: EvalLabel, snapshot: EvalSnapshot) -> None:
        self.hooks.append(("end", str(label)))


@pytest.fixture
def told() -> Told:
    return Told()


@pytest.fixture
def plan(tmp_path: Path, told: Told) -> RunPlan:
    config = config_for(tmp_path / "rd", reasoning_model="fake/reasoner")
    return replace(plan_for(config), callbacks=[told])


@pytest.fixture
def session(fake_model: FakeModel, plan: RunPlan) -> Iterator[Session]:
    opened = plan.open_session(PROMPT, 2)
    yield opened
    opened.close()


def lines(session: Session, name: str) -> list[dict[str, Any]]:
    path = session.store.path / name
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def kinds(session: Session) -> list[str]:
    return [event["type"] for event in lines(session, "events.jsonl")]


def test_an_evaluation_is_logged_counted_and_told_once(
    session: Session, plan: RunPlan, told: Told
) -> None:
    val = plan.split.val
    assert session.uncached_calls(BETTER, val) == len(val) == 5
    snapshot = session.evaluate(BETTER, val, VAL)
    assert snapshot.mean_score == 1.0 and len(snapshot.samples) == 5
    rows = lines(session, "evaluations.jsonl")
    assert {(r["split"], r["label"], r["prompt_id"]) for r in rows} == {
        ("val", "val:baseline", prompt_id_of(BETTER))
    }
    assert sorted(r["example_id"] for r in rows) == sorted(e.id for e in val)
    [event] = [e for e in lines(session, "events.jsonl") if e["type"] == "evaluation"]
    assert (event["label"], event["examples"], event["calls"]) == ("val:baseline", 5, 5)
    assert session.budget.metric_calls == 5
    assert told.hooks == [("start", "val:baseline"), ("end", "val:baseline")]
    assert told.advanced == 5
    assert session.uncached_calls(BETTER, val) == 0  # all cached now
    assert session.uncached_calls(PROMPT, val) == 5


def test_an_empty_evaluation_is_refused_before_any_call(
    session: Session, fake_model: FakeModel
) -> None:
    with pytest.raises(ConfigurationError, match=r"empty set of examples \(val:it3\)"):
        session.evaluate(BETTER, [], EvalLabel("val", "iteration", 3))
    assert fake_model.requests == [] and session.budget.metric_calls == 0


def test_a_replaying_session_logs_and_tells_nothing_but_still_counts(
    session: Session, plan: RunPlan, told: Told
) -> None:
    session.replay = Replay(CallReplay(session.store.run_id), store=session.store)
    session.evaluate(BETTER, plan.split.val, VAL)
    session.event("anything", at=1)
    assert lines(session, "evaluations.jsonl") == [] and "evaluation" not in kinds(session)
    assert "anything" not in kinds(session) and told.hooks == [] and told.advanced == 0
    assert session.budget.metric_calls == 5  # what was paid is counted all the same
    session.replay.end(0)
    session.event("anything", at=2)
    assert kinds(session)[-2:] == ["resumed", "anything"]


def test_reasoning_calls_are_written_with_their_outcome(session: Session) -> None:
    first = [{"role": "user", "content": "improve it"}]
    assert session.reason(first).endswith(f"<prompt>{BETTER}</prompt>")  # the fake reasoner's
    session.reflection(purpose="edit", attempt=1, outcome="ok")
    session.reason([{"role": "user", "content": "improve it again"}])
    session.reason(first)  # the second call's outcome was never told: written as it is
    rows = lines(session, "reflections.jsonl")
    assert [(r["purpose"], r["outcome"], r["cached"]) for r in rows] == [
        ("edit", "ok", False),
        (None, None, False),
    ]
    assert rows[0]["request"] == first and rows[0]["answer"].startswith("<diagnosis>")
    assert kinds(session).count("reasoning") == 3
    assert session.client.ledger.by_role["reasoning"].calls == 2  # the third was cached


def test_reasoning_without_a_reasoning_model_says_what_to_pass(session: Session) -> None:
    session.reasoning = None
    with pytest.raises(ConfigurationError, match="needs a reasoning model: pass --reasoning-model"):
        session.reason([{"role": "user", "content": "improve it"}])


def test_sampling_replaces_temperature_and_seed_only(session: Session) -> None:
    assert session.sampled(None) is session.evaluator
    sampled = session.sampled((0.9, 7))
    assert [(s.model, s.temperature, s.seed) for s in sampled.models] == [("fake/task", 0.9, 7)]
    assert session.evaluator.models[0].temperature != 0.9  # the run's own are unchanged


def test_the_time_budget_cancels_a_stuck_call_at_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    held = threading.Event()
    with serve(gate=held) as url:
        budget = {"max_seconds": 0.5}
        config = config_for(tmp_path / "rd", models=["openai/task"], api_base=url, budget=budget)
        stuck = plan_for(config).open_session(PROMPT, 1)
        try:
            call = stuck.client.complete(
                stuck.evaluator.models[0], [{"role": "user", "content": "hi"}]
            )
            with pytest.raises(BudgetExhausted, match="time budget"):
                stuck.run_in_budget(call)
            assert stuck.client.time_left is None  # the deadline is the step's only
        finally:
            held.set()
            stuck.close()
