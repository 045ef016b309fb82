"""The racing evaluator: a round's candidates scored on growing val minibatches, the clearly
worse dropped early, so a call budget buys more candidates (issue 33, item 2).

``race(ctx, candidates)`` scores every candidate on *rungs*: the first quarter, then half, then
all of the val rows (``fractions``; a first rung of at least 4 rows), in one seeded order of the
val rows, the same rows for every candidate, so each comparison is paired by row. After each
rung short of the last:

1. the **leader** is the best on that rung's rows among the candidates still in the race and
   the incumbent (``ctx.best_prompt``; ties keep the incumbent, then the earlier candidate); a
   candidate is **dropped** when the leader beats it on those rows by the one-sided paired
   sign-flip test of the acceptance gate (:func:`reflex.api.one_sided_p`, p < ``alpha``): a
   sequential paired test against the leader;
2. of the rest, the better ``keep`` share of the rung's entrants (half, at least one; ties: the
   earlier candidate, so callers list their most promising first) go on, the others are
   dropped: successive halving, which bounds a race of k candidates to about k/2 val passes
   even when no row tells them apart (docs/selection.md, "Racing", says why both).

The survivors of the last rung short of all the rows are recorded as every candidate is,
measured on all the val rows (the rung rows are cache hits), best partial score first, and the
acceptance gate decides.

Invariants (what a strategy calling it may rely on):

- every evaluation goes through ``ctx.evaluate`` / ``ctx.record_iteration``: cached, counted in
  the ledger and the budget, replayed identically on resume (no state but ``ctx.state`` and
  seeded orders);
- the rows of a rung are a prefix of the next rung's and are the same for every candidate of a
  race and every race of a run (drawn by ``random.Random(f"race:{seed}")``);
- a dropped candidate is recorded at once, ``Outcome.rejected`` with its ``race`` facts (the
  rung, its rows, its partial score, the leader's and the test's p); it is never measured on
  all the val rows, so it never becomes the best prompt on a partial score;
- a rung is started only for the candidates whose new rows the calls left pay for while one of
  them can still reach all the val rows; the others (lowest partial score first) are dropped
  and recorded, or skipped when not raced yet; when not even one can, ``BudgetExhausted`` is
  raised before any call of the rung (cache hits aside, so the check is conservative);
- every candidate is recorded exactly once (one iteration each), unless a run-level stop or
  ``max_iterations`` comes first: candidates past the iterations left are not raced, and
  survivors not recorded after such a stop are logged (``race_unrecorded``), never adopted.
  Early stopping (a per-phase stop) does not cut a race short: a race is one round.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reflex.api import (
    PHASES,
    BudgetExhausted,
    Example,
    IterationRecord,
    Outcome,
    one_sided_p,
    paired_diffs,
)

if TYPE_CHECKING:
    from reflex.api import StrategyContext

__all__ = [
    "DEFAULT_FRACTIONS",
    "Candidate",
    "RaceEntry",
    "RaceResult",
    "race",
    "race_once",
    "race_rows",
]

#: The rungs: a quarter, half, then all of the val rows.
DEFAULT_FRACTIONS = (0.25, 0.5, 1.0)
#: The fewest rows of a first rung: below 4 rows the paired test cannot reach p < 0.1.
MIN_RUNG_ROWS = 4
INCUMBENT = "incumbent"


@dataclass(frozen=True)
class Candidate:
    """One prompt to race, with what its record carries (``record_iteration``'s keywords)."""

    prompt: str
    reasoning: str = ""
    components: Mapping[str, str] | None = None
    lineage: Sequence[Mapping[str, Any]] = ()


@dataclass
class RaceEntry:
    """A candidate's race: the last ``rung`` it was scored on (1-based), that rung's ``rows``
    (val row ids), its ``score`` on them, whether it was ``dropped`` (and the leader's ``p``
    over it), and its ``record`` (None when a stop came before it was recorded)."""

    index: int
    candidate: Candidate
    rung: int = 0
    rows: tuple[str, ...] = ()
    score: float | None = None
    dropped: bool = False
    p: float | None = None
    leader: str = ""
    leader_score: float | None = None
    record: IterationRecord | None = None


@dataclass(frozen=True)
class RaceResult:
    """What a race did: every entry in candidate order and each rung's row count."""

    entries: tuple[RaceEntry, ...]
    rungs: tuple[int, ...] = ()
    races: int = 0  # this race's number in the run (1-based)
    skipped: tuple[Candidate, ...] = field(default=())  # past the iterations left: not raced

    @property
    def dropped(self) -> list[RaceEntry]:
        return [e for e in self.entries if e.dropped]

    @property
    def survivors(self) -> list[RaceEntry]:
        return [e for e in self.entries if not e.dropped]

    @property
    def best(self) -> IterationRecord | None:
        """The record that became the best prompt in this race (the last such), or None."""
        best = [e.record for e in self.entries if e.record is not None and e.record.is_best]
        return max(best, key=lambda r: r.iteration) if best else None


def race_rows(
    val: Sequence[Example], seed: int, fractions: Sequence[float] = DEFAULT_FRACTIONS
) -> list[list[Example]]:
    """The rungs' val rows: growing prefixes of one seeded order (the last is every row)."""
    order = list(val)
    random.Random(f"race:{seed}").shuffle(order)
    n = len(order)
    sizes = sorted({min(n, max(MIN_RUNG_ROWS, math.ceil(f * n))) for f in fractions if f > 0})
    if not sizes or sizes[-1] != n:
        sizes.append(n)
    return [order[:size] for size in sizes if size > 0]


def race(
    ctx: StrategyContext,
    candidates: Sequence[Candidate],
    *,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    alpha: float = 0.1,
    keep: float = 0.5,
) -> RaceResult:
    """Race ``candidates`` on val (see the module docstring for the rule and its invariants).

    Returns every raced candidate's :class:`RaceEntry`; ``result.best`` is the record that
    became the best prompt, if one did. Without val rows there is nothing to race on: each
    candidate is recorded as it would be without racing.
    """
    state = ctx.state.setdefault("race", {"races": 0})
    state["races"] = number = int(state["races"]) + 1
    rungs = race_rows(list(ctx.val), ctx.settings.seed, fractions) if len(ctx.val) else []
    room = max(0, ctx.settings.max_iterations - ctx.iteration)
    entries = [RaceEntry(i, c) for i, c in enumerate(candidates[:room])]
    if len(candidates) > room:
        ctx.log("race_skipped", race=number, candidates=len(candidates) - room, reason="iterations")
    alive, done, n = entries, 0, len(ctx.val)
    for rung, rows in enumerate(rungs, start=1):
        alive = _within_budget(ctx, alive, (len(rows) - done, n - done), len(rungs), number)
        if rung == len(rungs):
            break  # the last rung: all the val rows, through record_iteration
        where = (rung, len(rungs), number)
        alive, done = _run_rung(ctx, alive, rows, where, (alpha, keep)), len(rows)
    alive.sort(key=_rank)  # the best partial score first: the gate sees it first
    for entry in alive:
        if _halted(ctx):
            ctx.log("race_unrecorded", race=number, candidate=entry.index, rung=entry.rung)
            continue
        if rungs:
            entry.rung, entry.rows = len(rungs), tuple(e.id for e in rungs[-1])
        entry.record = _record(ctx, entry, len(rungs), number, None)
        if entry.record.val_score is not None:
            entry.score = entry.record.val_score
    raced = tuple(e for e in entries if e.rung)
    skipped = tuple(e.candidate for e in entries if not e.rung) + tuple(candidates[room:])
    sizes = tuple(len(r) for r in rungs)
    ctx.log("race", race=number, rungs=list(sizes), dropped=[e.index for e in raced if e.dropped])
    return RaceResult(raced, sizes, number, skipped)


def _rank(entry: RaceEntry) -> tuple[float, int]:
    return (-(entry.score if entry.score is not None else -1.0), entry.index)


def _within_budget(
    ctx: StrategyContext, alive: list[RaceEntry], rows: tuple[int, int], rungs: int, number: int
) -> list[RaceEntry]:
    """The candidates the calls left can take through the next rung (``rows``: its new rows and
    all the rows still to go) while one of them can still reach all the val rows (cache hits
    aside); the others, lowest partial score first, are dropped (recorded) or, not raced yet,
    skipped. ``BudgetExhausted`` when not even one can reach all the rows."""
    left, (step, to_go) = ctx.budget.remaining_calls, rows
    if left is None or not alive or to_go <= 0:
        return alive
    per_row = ctx.budget.calls_per_row * max(1, len(ctx.settings.models))
    rest = math.ceil((to_go - step) * per_row)  # one candidate's rows after this rung
    fits = (left - rest) // math.ceil(step * per_row)
    if fits <= 0:
        raise BudgetExhausted(
            f"metric-call budget: {left} calls left, a raced candidate needs "
            f"{math.ceil(to_go * per_row)} more to reach all the val rows (raise --max-calls)"
        )
    if fits >= len(alive):
        return alive
    ranked = sorted(alive, key=_rank)
    for entry in ranked[fits:]:
        if not entry.rung:
            continue  # not raced yet: skipped, nothing to record
        entry.dropped = True
        reason = (
            f"dropped by the race at rung {entry.rung}: {entry.score:.3f} on {len(entry.rows)} "
            f"val rows; the calls left ({left}) take {fits} candidate(s) on"
        )
        entry.record = _record(ctx, entry, rungs, number, reason)
    if not alive[0].rung:
        ctx.log("race_skipped", race=number, candidates=len(alive) - fits, reason="budget")
    return sorted(ranked[:fits], key=lambda e: e.index)


def _run_rung(
    ctx: StrategyContext,
    alive: list[RaceEntry],
    rows: list[Example],
    where: tuple[int, int, int],
    rule: tuple[float, float],
) -> list[RaceEntry]:
    """Score ``alive`` on ``rows`` (``where``: rung, rungs, race number); record the ones the
    leader clearly beats (``rule``: alpha), then, past the ``keep`` share of the rung's
    entrants (at least one), the lowest; the rest go on."""
    (rung, rungs, number), (alpha, keep) = where, rule
    incumbent = ctx.evaluate(ctx.best_prompt, rows, "val")  # usually cached: measured on val
    snaps = {e.index: ctx.evaluate(e.candidate.prompt, rows, "val") for e in alive}
    leader_name, leader = INCUMBENT, incumbent
    for entry in alive:
        if snaps[entry.index].mean_score > leader.mean_score:
            leader_name, leader = f"candidate {entry.index}", snaps[entry.index]
    ids = tuple(e.id for e in rows)
    survivors: list[RaceEntry] = []
    for entry in alive:
        snap = snaps[entry.index]
        entry.rung, entry.rows, entry.score = rung, ids, snap.mean_score
        entry.leader, entry.leader_score = leader_name, leader.mean_score
        diffs = paired_diffs(snap.per_example(), leader.per_example())
        entry.p = 1.0 if snap is leader else one_sided_p(list(diffs.values()), seed=number)
        if entry.p < alpha:
            entry.dropped = True
            entry.record = _record(ctx, entry, rungs, number, _why(entry, len(rows)))
        else:
            survivors.append(entry)
    places = max(1, math.ceil(keep * len(alive)))
    ranked = sorted(survivors, key=_rank)
    for place, entry in enumerate(ranked[places:], start=places + 1):
        entry.dropped = True
        reason = f"{_why(entry, len(rows))}; placed {place} of {len(alive)}, {places} go on"
        entry.record = _record(ctx, entry, rungs, number, reason)
    return sorted(ranked[:places], key=lambda e: e.index)


def _why(entry: RaceEntry, rows: int) -> str:
    return (
        f"dropped by the race at rung {entry.rung}: {entry.score:.3f} on {rows} val rows, "
        f"{entry.leader} {entry.leader_score:.3f} (paired p={entry.p:.3g})"
    )


def _record(
    ctx: StrategyContext, entry: RaceEntry, rungs: int, number: int, dropped: str | None
) -> IterationRecord:
    facts = {
        "race": number,
        "rung": entry.rung,
        "rungs": rungs,
        "rows": list(entry.rows),
        "score": entry.score,
        "leader": entry.leader,
        "leader_score": entry.leader_score,
        "p": entry.p,
        "dropped": dropped is not None,
    }
    candidate = entry.candidate
    outcome = Outcome.rejected(dropped) if dropped is not None else None
    if dropped is not None:
        ctx.log("candidate_rejected", phase=ctx.capability(PHASES).phase, reason=dropped)
    return ctx.record_iteration(
        candidate.prompt,
        None,
        outcome,
        reasoning=candidate.reasoning,
        components=candidate.components,
        lineage=candidate.lineage,
        race=facts,
    )


def _halted(ctx: StrategyContext) -> bool:
    """A run-level stop (not early stopping, which ends a phase) or no iteration left."""
    if ctx.iteration >= ctx.settings.max_iterations:
        return True
    stop = ctx.capability(PHASES).stop
    return stop is not None and not stop.per_phase


def race_once(ctx: StrategyContext, state: dict[str, Any], candidates: Sequence[Candidate]) -> bool:
    """Race ``candidates`` as one round when the run races (``--race``, val rows) and this
    strategy's ``state`` has tried none yet; True when it did (the caller's round is over)."""
    if not (ctx.settings.race and len(ctx.val)) or int(state.get("tried", 0)):
        return False
    race(ctx, candidates)
    state["tried"] = len(candidates)
    return True
