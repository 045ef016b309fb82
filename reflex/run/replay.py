"""Resume by replay: how a resumed run reaches the point where it was interrupted.

**What is replayed.** A resumed run (``--resume RUN``) restores no strategy state. It runs again
from its start, the test baseline, the val baseline and the strategy from iteration 1, with the
run's own config, dataset, prompt and splits (``reflex.run.resume.load_resume`` refuses any
difference) and its seed, against the run's response cache. While it replays, the run writes
nothing it already wrote (events.jsonl, evaluations.jsonl, reflections.jsonl, checkpoint.json,
the iteration prompts) and tells its callbacks nothing (``Session.notify`` is muted; the engine
sends the test baseline again, which trackers dedupe). Where the record ends the replay ends:
one ``resumed`` event (``after_iteration``) is written and the run goes on live.

**From which records, in what order.** Where the replay ends depends on what the killed
process left (:meth:`Replay.resuming`):

1. A checkpoint with iterations (killed after iteration N): the baselines and iterations 1..N
   are replayed. Each replayed :class:`~reflex.result.IterationRecord` is compared with the
   checkpoint's (``system_prompt``, ``score``, ``val_score``, ``failed``, ``is_best``); any
   difference stops the run ("resume diverged"). After iteration N the replay ends.
2. A checkpoint of stage ``baseline`` (no iteration yet): the baselines are replayed; the
   replay ends as the strategy starts (``after_iteration=0``).
3. No checkpoint (killed during the baselines): evaluations.jsonl decides. An evaluation whose
   (label, prompt id) holds every (example, model) row it is about to make is replayed; the
   first one the record lacks ends the replay before it starts, and is logged live. The replay
   also ends once every logged evaluation is replayed.
4. No checkpoint and nothing logged: nothing is replayed.

**A replayed call, told from a paid one.** Every cache row names its *owner*, the id of the
run that paid for it (``CachedResponse.owner``). :class:`CallReplay` is the client's hook
(``reflex.models.client.ReplayHook``): a hit on a row this run owns, met for the first time in
this process, is counted in the ledger as a paid call (its tokens and cost, and the budget's
metric calls), since the original run paid for it exactly once; a key met again, or a row of
another run, is a cache hit, as it was originally. Either way ``Completion.cached`` is True and
nothing is paid again. A call that failed has no row (only answers are stored): it is paid
again. Retries leave no row either: they are added from events.jsonl
(``reflex.run.resume.earlier_retries``), and the time spent from the checkpoint's
``elapsed_s``.

**Why the results are those of an uninterrupted run.** The inputs are the same (checked at
resume), every random choice is seeded, and every answer the original run received is in the
cache under the full request, so the strategy sees the same answers and makes the same calls in
the same order; the ledger counts them as the original did, so a budget stops at the same place.
Whatever still differs (a model or cache changed in between) is caught by the iteration check
and ends the run with an error instead of a different result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reflex.checks.isolation import EVALUATIONS_FILE
from reflex.errors import ReflexError
from reflex.result import IterationRecord
from reflex.run.store import RunStore

__all__ = ["CallReplay", "Replay", "logged_evaluations"]

# (label, prompt id) -> the (example id, model) rows evaluations.jsonl holds for it.
Logged = dict[tuple[str, str], set[tuple[str, str]]]
_CHECKED = ("system_prompt", "score", "val_score", "failed", "is_best")


class CallReplay:
    """Which cache hits count as paid calls (implements ``reflex.models.client.ReplayHook``)."""

    def __init__(self, owner: str | None = None) -> None:
        self.owner = owner  # the run id written on every row this run pays for
        self._seen: set[str] = set()  # keys this process has answered

    def counts_as_paid(self, key: str, row_owner: str | None) -> bool:
        """Whether a hit on ``key`` replays a call this run paid for in an earlier process."""
        return self.owner is not None and row_owner == self.owner and key not in self._seen

    def answered(self, key: str) -> None:
        """``key`` was answered in this process (paid, or from the cache)."""
        self._seen.add(key)


class Replay:
    """One run's replay: whether it is under way, and where it ends (see the module doc)."""

    def __init__(
        self,
        calls: CallReplay | None = None,
        *,
        store: RunStore | None = None,
        iterations: Sequence[Mapping[str, Any]] = (),
        logged: Logged | None = None,
    ) -> None:
        self.calls = calls or CallReplay()
        self._store = store
        self._iterations = list(iterations)  # the checkpoint's records, case 1
        self._logged: Logged | None = logged  # evaluations.jsonl's rows, case 3
        self.active = store is not None  # a record to replay (and to say "resumed" in)

    @classmethod
    def resuming(cls, store: RunStore, run_id: str, checkpoint: Mapping[str, Any] | None) -> Replay:
        """The replay of run ``run_id`` reopened in ``store`` with its ``checkpoint``."""
        if checkpoint:  # cases 1 and 2
            return cls(CallReplay(run_id), store=store, iterations=checkpoint.get("iterations", []))
        logged = logged_evaluations(store.path)
        if logged:  # case 3
            return cls(CallReplay(run_id), store=store, logged=logged)
        return cls(CallReplay(run_id))  # case 4

    def end(self, iteration: int) -> None:
        """End the replay after ``iteration``: from here the run is logged and notified."""
        if self.active:
            self.active, self._logged = False, None
            if self._store is not None:
                self._store.event("resumed", after_iteration=iteration)

    def abandon(self) -> None:
        """Stop replaying without a ``resumed`` event (the run failed: its end is recorded)."""
        self.active = False

    def evaluation_starts(self, label: str, prompt_id: str, rows: set[tuple[str, str]]) -> None:
        """Case 3: go on replaying while the record holds this evaluation's rows."""
        if not self.active or self._logged is None:
            return
        if rows <= self._logged.get((label, prompt_id), set()):
            del self._logged[(label, prompt_id)]
        else:
            self.end(0)

    def evaluation_ended(self) -> None:
        """Case 3: the last logged evaluation was replayed; what follows is logged."""
        if self.active and self._logged is not None and not self._logged:
            self.end(0)

    def strategy_starts(self) -> None:
        """Cases 2 and 3: no iteration to replay, so the replay ends before the first."""
        if not self._iterations:
            self.end(0)

    def iteration_replayed(self, record: IterationRecord) -> bool:
        """Case 1: whether ``record`` was replayed (checked against the checkpoint, and not to
        be written again); the last checkpointed iteration ends the replay."""
        if not self.active:
            return False
        saved = self._iterations[record.iteration - 1]
        diffs = [f for f in _CHECKED if saved.get(f) != getattr(record, f)]
        if diffs:
            raise ReflexError(
                f"resume diverged at iteration {record.iteration} ({', '.join(diffs)} differ): "
                "the models or the cache changed since the run was interrupted; start a new run"
            )
        if record.iteration >= len(self._iterations):
            self.end(record.iteration)
        return True


def logged_evaluations(path: Path) -> Logged:
    """The evaluations a run's evaluations.jsonl already holds: (label, prompt id) -> the
    (example id, model) rows logged under it. A line a killed process left torn is skipped."""
    logged: Logged = {}
    try:
        lines = (path / EVALUATIONS_FILE).read_bytes().splitlines()
    except FileNotFoundError:
        return logged
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            key = (str(row.get("label")), str(row.get("prompt_id")))
            logged.setdefault(key, set()).add((str(row.get("example_id")), str(row.get("model"))))
    return logged
