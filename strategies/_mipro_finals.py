"""The end of a ``mipro`` round: its best combinations by mean measured on every val row.

A combination (:class:`Combo`) is scored by the round's trials on minibatches; the *finalists*
(:func:`finalists`) are the combinations with the best mean over every selection row they were
scored on, not measured on all of them yet and ahead of the incumbent on those same rows
(cached). :class:`Finals` measures them:

- without ``--race``: the ``full_eval_top`` best, one after another, each through
  ``ctx.record_iteration`` (``type: full_eval`` on its lineage);
- under ``--race`` (with a val split): the ``race_top`` best are raced
  (:func:`._race.race`: growing rungs of val rows, the same rows for each, the clearly worse
  dropped early by the paired test and halving), so a round's val calls look at several
  finalists instead of one (``type: race`` on the lineage). The race's survivor is measured on
  every val row and the ``--accept`` gate decides, as for every candidate; a dropped finalist is
  recorded ``rejected`` with its ``race`` facts and never becomes the best prompt.

Either way only a measurement on every val row can make a combination the best prompt, and
every call goes through the run's client (cache, ledger, budget, resume by replay).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reflex.api import PHASES, Example

from ._race import Candidate, race

if TYPE_CHECKING:
    from reflex.api import StrategyContext

__all__ = ["Combo", "Finals", "finalists"]


@dataclass
class Combo:
    """One combination tried: its prompt, params and every selection row it was scored on."""

    prompt: str
    params: dict[str, int]
    rows: dict[str, float] = field(default_factory=dict)  # by Sample.key (example @ model)
    ids: set[str] = field(default_factory=set)  # the example ids scored
    trials: int = 0

    def mean(self) -> float:
        return sum(self.rows.values()) / len(self.rows) if self.rows else 0.0


def finalists(
    ctx: StrategyContext,
    combos: Iterable[Combo],
    rows: Sequence[Example],
    label: str,
    *,
    measured: set[str],
    top: int,
) -> list[Combo]:
    """Up to ``top`` combinations not in ``measured``, best mean first (ties: the earlier),
    each ahead of the incumbent on the rows it was scored on."""
    pending = sorted((c for c in combos if c.prompt not in measured), key=lambda c: -c.mean())
    found: list[Combo] = []
    for combo in pending:
        if len(found) >= top:
            break
        if _ahead(ctx, combo, rows, label) > 0:
            found.append(combo)
    return found


def _ahead(ctx: StrategyContext, combo: Combo, rows: Sequence[Example], label: str) -> float:
    """``combo``'s mean lead over the incumbent on the rows it was scored on (cached)."""
    scored = [e for e in rows if e.id in combo.ids]
    incumbent = ctx.evaluate(ctx.best_prompt, scored, label=label).per_example()
    paired = [score - incumbent[key] for key, score in combo.rows.items() if key in incumbent]
    return sum(paired) / len(paired) if paired else 0.0


class Finals:
    """A round's full evaluations (see the module docstring). ``measured``: the prompts
    measured (or raced) already, shared with the search and updated here."""

    def __init__(
        self, ctx: StrategyContext, rows: Sequence[Example], label: str, measured: set[str]
    ) -> None:
        self.ctx, self.rows, self.label, self.measured = ctx, list(rows), label, measured

    @property
    def raced(self) -> bool:
        """Whether the finalists are raced: ``--race`` and a val split to race on."""
        return self.ctx.settings.race and self.label == "val"

    def run(self, combos: Iterable[Combo], *, top: int, race_top: int) -> None:
        """Measure the round's finalists: ``top`` one by one, or ``race_top`` raced."""
        tried = list(combos)
        if self.raced:
            self._race(tried, race_top)
            return
        for _ in range(top):
            picked = self._pick(tried, 1)
            if not picked or not self.fits():
                return
            self.measured.add(picked[0].prompt)
            self._record(picked[0])

    def _pick(self, combos: Sequence[Combo], top: int) -> list[Combo]:
        return finalists(self.ctx, combos, self.rows, self.label, measured=self.measured, top=top)

    def fits(self) -> bool:
        """An iteration left, no stop but early stopping, and the calls of one full val pass."""
        ctx = self.ctx
        if ctx.iteration >= ctx.settings.max_iterations:
            return False
        stop = ctx.capability(PHASES).stop
        if stop is not None and not stop.per_phase:
            return False
        left = ctx.budget.remaining_calls
        return left is None or left >= self.calls(len(self.rows))

    def calls(self, rows: int) -> int:
        per_row = len(self.ctx.settings.models) * self.ctx.budget.calls_per_row
        return math.ceil(rows * per_row)

    def _entry(self, combo: Combo, kind: str) -> dict[str, Any]:
        return {
            "type": kind,
            **combo.params,
            "minibatch_mean": round(combo.mean(), 6),
            "minibatch_rows": len(combo.rows),
            "trials": combo.trials,
            "split": self.label,
        }

    def _note(self, combo: Combo, how: str) -> str:
        return (
            f"mipro: {how} of the best combination by mean ({combo.mean():.3f} on "
            f"{len(combo.rows)} rows over {combo.trials} trial(s))"
        )

    def _record(self, combo: Combo) -> None:
        ctx = self.ctx
        entry = self._entry(combo, "full_eval")
        train = None if len(ctx.val) else ctx.evaluate(combo.prompt, self.rows)
        ctx.log("mipro_full_eval", **entry)
        note = self._note(combo, f"full {self.label} evaluation")
        ctx.record_iteration(combo.prompt, train, reasoning=note, lineage=[entry])

    def _race(self, combos: list[Combo], top: int) -> None:
        """Race the round's ``top`` finalists on growing val rungs (each recorded once)."""
        chosen = self._pick(combos, top)
        if not chosen or not self.fits():
            return
        entries = [self._entry(c, "race") for c in chosen]
        self.ctx.log("mipro_race", finalists=entries)
        candidates = [
            Candidate(c.prompt, reasoning=self._note(c, "race"), lineage=[entry])
            for c, entry in zip(chosen, entries, strict=True)
        ]
        result = race(self.ctx, candidates)
        # each raced finalist is recorded once; one the race had no room for may come back
        self.measured.update(entry.candidate.prompt for entry in result.entries)
