"""Resume by replay (reflex.run.replay): where a replay ends, what it checks, which hits count
as paid. The whole loop (kill, resume, identical result) is tests/test_resume.py's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reflex.errors import ReflexError
from reflex.models.cache import CachedResponse, ResponseCache
from reflex.models.client import ClientSettings, ModelSpec, ProviderClient, ReplayHook
from reflex.models.retry import RetryPolicy
from reflex.models.runner import LoopRunner
from reflex.result import IterationRecord
from reflex.run.replay import CallReplay, Replay, logged_evaluations
from reflex.run.store import RunStore
from reflex.testing import FakeModel

MESSAGES = [{"role": "user", "content": "q"}]


def record(iteration: int, prompt: str = "p") -> IterationRecord:
    return IterationRecord(
        iteration=iteration,
        score=0.5,
        val_score=0.5,
        scores_by_metric={},
        system_prompt=f"{prompt}{iteration}",
    )


def events(store: RunStore) -> list[dict[str, object]]:
    path = store.path / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_row_this_run_paid_for_counts_as_paid_once() -> None:
    calls: ReplayHook = CallReplay("run-1")  # what the client sees: the models/ protocol
    assert calls.owner == "run-1"
    assert calls.counts_as_paid("k", "run-1")
    assert not calls.counts_as_paid("k", "run-2") and not calls.counts_as_paid("k", None)
    calls.answered("k")
    assert not calls.counts_as_paid("k", "run-1")  # met again: a cache hit, as originally
    assert not CallReplay(None).counts_as_paid("k", None)


def test_the_client_counts_a_replayed_call_as_paid_and_pays_nothing(
    runner: LoopRunner, tmp_path: Path
) -> None:
    fake = FakeModel(lambda request: "fresh").install()
    cache = ResponseCache(tmp_path / "cache.sqlite")
    spec = ModelSpec("fake/m")
    settings = ClientSettings(retry=RetryPolicy(max_retries=0))
    key = ProviderClient(settings).key(spec, MESSAGES)
    cache.put(key, CachedResponse("earlier", 3, 4, 0.5, owner="run-1"))
    client = ProviderClient(settings, cache=cache, replay=CallReplay("run-1"))
    assert client.would_pay(spec, MESSAGES)  # replayed: counted against the budget
    first = runner.run(client.complete(spec, MESSAGES))
    second = runner.run(client.complete(spec, MESSAGES))
    assert first.text == second.text == "earlier" and first.cached and second.cached
    usage = client.ledger.by_role["task"]
    assert (usage.calls, usage.cache_hits, usage.prompt_tokens) == (1, 1, 3)
    assert not client.would_pay(spec, MESSAGES) and fake.requests == []
    other = ProviderClient(settings, cache=cache, replay=CallReplay("run-2"))
    runner.run(other.complete(spec, MESSAGES))  # another run's row: a plain hit
    assert other.ledger.by_role["task"].calls == 0
    cache.close()


def test_a_checkpoint_replays_its_iterations_then_goes_live(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    checkpoint = {"stage": "iterations", "iterations": [record(1).to_dict(), record(2).to_dict()]}
    replay = Replay.resuming(store, store.run_id, checkpoint)
    assert replay.active and replay.calls.owner == store.run_id
    replay.evaluation_starts("test:baseline", "id", {("e1", "m")})  # baselines: still replayed
    replay.evaluation_ended()
    replay.strategy_starts()
    assert replay.active
    assert replay.iteration_replayed(record(1)) and replay.active
    assert replay.iteration_replayed(record(2)) and not replay.active  # the last one ends it
    assert not replay.iteration_replayed(record(3))  # live: written as usual
    assert [(e["type"], e["after_iteration"]) for e in events(store)] == [("resumed", 2)]


def test_a_replayed_iteration_that_differs_stops_the_run(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    replay = Replay.resuming(store, store.run_id, {"iterations": [record(1).to_dict()]})
    with pytest.raises(ReflexError, match=r"resume diverged at iteration 1 \(system_prompt"):
        replay.iteration_replayed(record(1, prompt="other"))


def test_a_baseline_checkpoint_ends_the_replay_as_the_strategy_starts(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    replay = Replay.resuming(store, store.run_id, {"stage": "baseline", "iteration": 0})
    assert replay.active
    replay.strategy_starts()
    assert not replay.active and events(store)[-1]["after_iteration"] == 0


def test_without_checkpoint_the_logged_evaluations_decide(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    rows = [
        {"label": "test:baseline", "prompt_id": "p1", "example_id": e, "model": "m"}
        for e in ("a", "b")
    ]
    store.append("evaluations.jsonl", rows)
    with open(store.path / "evaluations.jsonl", "a") as handle:
        handle.write('{"label": "torn')  # a killed process's last line is skipped
    assert logged_evaluations(store.path) == {("test:baseline", "p1"): {("a", "m"), ("b", "m")}}
    replay = Replay.resuming(store, store.run_id, None)
    assert replay.active
    replay.evaluation_starts("test:baseline", "p1", {("a", "m"), ("b", "m")})
    assert replay.active  # every row is in the record: replayed, not logged again
    replay.evaluation_ended()
    assert not replay.active  # the record ends here: what follows is logged

    again = Replay.resuming(store, store.run_id, None)
    again.evaluation_starts("test:baseline", "p1", {("a", "m"), ("c", "m")})
    assert not again.active  # a row the record lacks: this evaluation is live


def test_nothing_recorded_nothing_replayed(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    replay = Replay.resuming(store, store.run_id, None)
    assert not replay.active and replay.calls.owner == store.run_id
    replay.end(0)
    replay.strategy_starts()
    assert events(store) == []  # no "resumed" event: there was nothing to replay
    fresh = Replay(CallReplay("new-run"))
    assert not fresh.active and fresh.calls.owner == "new-run"


def test_a_failed_run_abandons_its_replay_silently(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    replay = Replay.resuming(store, store.run_id, {"iterations": [record(1).to_dict()]})
    replay.abandon()
    assert not replay.active and events(store) == []
