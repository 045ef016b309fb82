"""Budgets: metric calls, reasoning calls, dollars and wall-clock, checked before work starts."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from reflex.config import BudgetConfig
from reflex.errors import BudgetExhausted
from reflex.models.usage import Ledger

__all__ = ["Budget", "figure", "requests_and_cost"]

RESERVE_FLOOR = 0.05  # the final's time reserve: at least this share of --max-seconds


def figure(value: float, decimals: int = 0) -> str:
    """``value`` with three significant digits and at least ``decimals`` decimals, never
    rounded to a false 0: 0.0123 s is "0.0123", not "0s"; $0.00004 is "0.0000400"."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    digits = max(decimals, 2 - math.floor(math.log10(abs(value))))
    return f"{value:.{digits}f}"


def _dollars(value: float) -> str:
    return f"${figure(value, 4)}"


@dataclass
class Budget:
    """Tracks what was spent against the limits and refuses work that would exceed them.

    ``metric_calls`` counts paid task-model calls: one per (example, model) evaluation, several
    for a pipeline that calls a model several times (cache hits are free). The engine reserves
    room for the final test evaluation so a budget never leaves a run without its honest final
    measurement: the task requests the baseline made on the test rows, paid or served from the
    cache, and what those requests (and their judge calls) cost, a cache hit at its original
    call's cost (a new prompt pays for each).

    ``--max-seconds`` keeps time for it the same way: ``reserved_seconds`` is estimated from the
    baseline's own measurement of the test rows. The search must end by ``max_seconds -
    reserved_seconds`` (its calls still in flight then are cancelled, see ``seconds_left``); the
    final may then use what is left of ``max_seconds``, and at least its whole reserve.
    """

    limits: BudgetConfig
    ledger: Ledger
    metric_calls: int = 0
    reserved_calls: int = 0
    reserved_cost: float = 0.0
    reserved_seconds: float = 0.0
    reserved_total_calls: int = 0
    started: float = field(default_factory=time.monotonic)
    elapsed_before: float = 0.0
    # What the time messages can say: the baseline's measured seconds (None until measured),
    # the rows it evaluates (test rows x models) and the pace of the latest evaluation.
    baseline_seconds: float | None = None
    baseline_rows: int = 0
    pace: tuple[int, float] | None = None  # (rows, seconds) of the latest evaluation

    def reserve_final(
        self, *, rows: int, requests: int, cost: float, judged: int, seconds: float, paid: int
    ) -> float | None:
        """Keep room for the final test evaluation, from the baseline's measurement of the same
        ``rows`` (test rows x models); returns the seconds kept (None without a time limit).

        Calls: the task ``requests`` the baseline made, paid or served from the cache (a new
        prompt pays for each), at least one per row (a pipeline makes several). Cost: what those
        and their judge calls cost, a cache hit at its original call's price, so a baseline
        served from a cache shared with earlier runs still reserves the final's money (an
        unpriced model reserves none). Total calls: those requests and the ``judged`` judge
        requests. Time: twice what the baseline took, scaled up to every row when the cache
        answered some of them (``paid`` < ``rows``), and at least 5% of ``max_seconds``.
        """
        self.reserved_calls = max(rows, requests)
        self.reserved_cost = cost
        self.baseline_seconds, self.baseline_rows = seconds, rows
        self.reserved_total_calls = self.reserved_calls + judged
        limit = self.limits.max_seconds
        if limit is None:
            return None
        per_paid = seconds * rows / paid if 0 < paid < rows else seconds
        self.reserved_seconds = min(max(2.0 * per_paid, RESERVE_FLOOR * limit), limit)
        return self.reserved_seconds

    @property
    def elapsed(self) -> float:
        return self.elapsed_before + time.monotonic() - self.started

    def seconds_left(self, *, use_reserve: bool = False) -> float | None:
        """Seconds the next piece of work may take under ``max_seconds`` (None: no limit).

        The search (``use_reserve=False``) stops where the final's reserve begins; the final
        (``use_reserve=True``) may take what is left, and at least its whole reserve.
        """
        limit = self.limits.max_seconds
        if limit is None:
            return None
        if use_reserve:
            return max(limit - self.elapsed, self.reserved_seconds)
        return limit - self.reserved_seconds - self.elapsed

    def time_exhausted(self, *, use_reserve: bool = False) -> BudgetExhausted:
        """The error a time budget ends work with (checked before it, or at its deadline): the
        seconds used and given, never rounded to a false "0s used of 0s", and what the run
        measured it needs, so the user knows how far to raise ``--max-seconds``."""
        limit = self.limits.max_seconds or 0.0
        used = f"time budget: {figure(self.elapsed)} s used of {limit:g} s"
        if use_reserve:
            return BudgetExhausted(
                f"the final test evaluation ran out of its reserve: {used} "
                f"({figure(self.reserved_seconds)} s were kept for it); {self._needs()}"
            )
        if self.baseline_seconds is None and not self.reserved_seconds:
            return BudgetExhausted(f"{used}, before the baseline was measured; {self._needs()}")
        return BudgetExhausted(
            f"{used}, {figure(self.reserved_seconds)} s of it kept for the final; {self._needs()}"
        )

    def _needs(self) -> str:
        """What the run measured it needs, and what to do."""
        if self.baseline_seconds is not None:
            return (
                f"the baseline alone took {figure(self.baseline_seconds)} s on this machine and "
                "the final needs as long: raise --max-seconds to continue"
            )
        if self.pace is not None and self.baseline_rows:
            rows, seconds = self.pace
            need = seconds * self.baseline_rows / max(rows, 1)
            return (
                f"the baseline alone needs about {figure(need)} s on this machine "
                f"({self.baseline_rows} test rows at {figure(seconds / max(rows, 1))} s a row), "
                "and the final as long: raise --max-seconds well above both"
            )
        if self.reserved_seconds:
            return "raise --max-seconds to continue"
        return (
            "nothing was measured yet: raise --max-seconds to leave room for the baseline and "
            "the final on the test rows"
        )

    def check_evaluation(self, uncached_calls: int, *, use_reserve: bool = False) -> None:
        """Raise BudgetExhausted if ``uncached_calls`` more metric calls would break a limit."""
        self._check_clock_and_cost(use_reserve)
        self.check_total(uncached_calls, use_reserve=use_reserve)
        limit = self.limits.max_calls
        if limit is None or uncached_calls == 0:
            return
        if use_reserve and self.reserved_calls:
            # The final evaluation is held to its reserve (what the baseline needed on the same
            # rows): for a pipeline, a better estimate than its average over every row so far.
            uncached_calls = min(uncached_calls, self.reserved_calls)
        room = limit - self.metric_calls - (0 if use_reserve else self.reserved_calls)
        if uncached_calls > room:
            raise BudgetExhausted(
                f"metric-call budget: {uncached_calls} more calls needed, {max(room, 0)} left of "
                f"{limit} (raise --max-calls to continue)"
            )

    def check_total(self, needed: int, *, use_reserve: bool = False) -> None:
        """``--max-total-calls``: every paid call of every role. ``needed`` is a lower bound of
        what the next step pays (its task calls; judge calls are counted as they are made)."""
        limit = self.limits.max_total_calls
        if limit is None:
            return
        spent = self.ledger.total().calls
        room = limit - spent - (0 if use_reserve else self.reserved_total_calls)
        if room <= 0 or (needed > room and not use_reserve):
            raise BudgetExhausted(
                f"total-call budget: {spent} calls made of {limit} (task, judge and reasoning; "
                f"{0 if use_reserve else self.reserved_total_calls} kept for the final; raise "
                "--max-total-calls to continue)"
            )

    def check_reasoning(self) -> None:
        self.check_total(1)
        self._check_clock_and_cost(False)
        limit = self.limits.max_reasoning_calls
        if limit is not None and self.ledger.by_role["reasoning"].calls >= limit:
            raise BudgetExhausted(f"reasoning-call budget: all {limit} calls used")

    def _check_clock_and_cost(self, use_reserve: bool) -> None:
        left = self.seconds_left(use_reserve=use_reserve)
        if left is not None and left <= 0:
            raise self.time_exhausted(use_reserve=use_reserve)
        if self.limits.max_cost is not None and not use_reserve:
            # The final's cost was reserved: a search step that overshot (a call's cost is known
            # only once it is made) cannot take the final's measurement away.
            spent = self.ledger.total().cost + self.reserved_cost
            if spent >= self.limits.max_cost:
                raise BudgetExhausted(
                    f"cost budget: {_dollars(spent)} spent or reserved of "
                    f"{_dollars(self.limits.max_cost)} (raise --max-cost to continue)"
                )


def requests_and_cost(ledger: Ledger) -> tuple[int, float, int]:
    """Task-model requests so far (paid, replays of this run's own included, and cache hits),
    the known cost of task and judge requests (paid, plus what cache hits had cost), and the
    judge requests (paid and cache hits): what ``Budget.reserve_final`` is measured with."""
    by_role = ledger.by_role
    task, judge = by_role["task"], by_role["judge"]
    cost = sum(by_role[role].cost + by_role[role].cached_cost for role in ("task", "judge"))
    return task.calls + task.cache_hits, cost, judge.calls + judge.cache_hits
