"""Helpers shared by the reasoning-free strategies (``instructions``, ``fewshot``, ``auto``).

One candidate costs, in model calls (cache hits are free and not counted):

- with screening: ``2 * batch_size`` on a fixed train minibatch (the incumbent's half is cached
  after the first candidate, so usually ``batch_size``), plus ``len(val)`` only when the
  candidate does not score below the incumbent on that minibatch (nor break the JSON schema or
  the tool-call format on more of its rows: the format guard);
- without screening: ``len(val)``.

Screening is "cheap enough" (the default, ``screen=None``) when ``2 * batch_size <= len(val)``:
a rejected candidate then saves more val calls than the minibatch cost.

Near the end of a ``--max-calls`` budget: when fewer calls remain than one val pass, no
candidate can be measured, so the run ends (``BudgetExhausted``) before any screening call is
paid; when the calls left cover a val pass but not the minibatch too, the candidate goes
straight to val.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from reflex.api import (
    PHASES,
    SCREENING,
    BudgetExhausted,
    EvalSnapshot,
    Example,
    IterationRecord,
    Outcome,
)

if TYPE_CHECKING:
    from reflex.api import StrategyContext

__all__ = ["join_sections", "references", "screening_batch", "try_candidate"]


def join_sections(base: str, *sections: str) -> str:
    """``base`` first, then each non-empty section, separated by blank lines.

    The base prompt stays a fixed prefix across candidates, so a local model's KV prefix cache
    is reused; the variable parts (instructions, demos) come after it, the user input last.
    """
    parts = [base.strip(), *(s.strip() for s in sections)]
    return "\n\n".join(p for p in parts if p)


def references(examples: Iterable[Example]) -> list[str]:
    """The stripped, non-empty reference answers of ``examples``, in order."""
    return [e.ideal.strip() for e in examples if e.ideal is not None and e.ideal.strip()]


def screening_batch(ctx: StrategyContext, screen: bool | None) -> list[Example]:
    """A seeded train minibatch to screen candidates on, or ``[]`` when screening is off."""
    enabled = screen if screen is not None else 0 < 2 * ctx.settings.batch_size <= len(ctx.val)
    train = list(ctx.train)
    if not enabled or not train:
        return []
    return ctx.rng.sample(train, min(ctx.settings.batch_size, len(train)))


def try_candidate(
    ctx: StrategyContext,
    prompt: str,
    incumbent: str,
    *,
    batch: Sequence[Example],
    reasoning: str,
    exclude: frozenset[str] = frozenset(),
) -> IterationRecord:
    """Screen ``prompt`` on ``batch`` (minus ``exclude``: e.g. its own demo rows), then record it.

    A candidate scoring below ``incumbent`` on the minibatch is recorded as rejected (no val
    calls) and logged as ``candidate_rejected``. Otherwise it is measured on val and recorded
    as accepted exactly when it becomes the new best on val.
    """
    rows = _affordable_rows(ctx, [e for e in batch if e.id not in exclude])
    train: EvalSnapshot | None = None
    change: float | None = None
    if rows:
        before = ctx.evaluate(incumbent, rows)
        train = ctx.evaluate(prompt, rows)
        change = train.mean_score - before.mean_score
        if change < 0:
            reason = (
                f"screened out on a {len(rows)}-row train minibatch: "
                f"{train.mean_score:.3f} < incumbent {before.mean_score:.3f}"
            )
            ctx.log("candidate_rejected", phase=ctx.capability(PHASES).phase, reason=reason)
            return ctx.record_iteration(
                prompt, train, Outcome.rejected(reason), reasoning=reasoning, change=change
            )
        broken = ctx.capability(SCREENING).format_screen(train, before)
        if broken is not None:  # the format guard: more answers break the schema or call format
            ctx.log("candidate_rejected", phase=ctx.capability(PHASES).phase, reason=broken)
            return ctx.record_iteration(
                prompt, train, Outcome.rejected(broken), reasoning=reasoning, change=change
            )
    if not len(ctx.val) and train is None:
        # No val split: record_iteration selects on the train score, so one is needed.
        train = ctx.evaluate(prompt, [e for e in ctx.train if e.id not in exclude] or None)
    record = ctx.record_iteration(prompt, train, reasoning=reasoning, change=change)
    if not record.is_best:
        ctx.log(
            "candidate_rejected",
            phase=ctx.capability(PHASES).phase,
            reason="not better on val",
            val_score=record.val_score,
            best_val=ctx.best_val,
        )
    return record


def _affordable_rows(ctx: StrategyContext, rows: list[Example]) -> list[Example]:
    """``rows`` to screen on, ``[]`` when the budget covers val but not the minibatch too.

    Raises ``BudgetExhausted`` when the calls left cannot pay for one val pass.
    """
    budget = ctx.budget
    if budget.remaining_calls is None or not len(ctx.val):
        return rows
    per_row = budget.calls_per_row * max(1, len(ctx.settings.models))
    val_pass = math.ceil(len(ctx.val) * per_row)
    if budget.remaining_calls < val_pass:
        raise BudgetExhausted(
            f"metric-call budget: {budget.remaining_calls} calls left, a candidate's val pass "
            f"needs {val_pass} (raise --max-calls to continue)"
        )
    screen = math.ceil(2 * len(rows) * per_row)
    return rows if budget.remaining_calls >= val_pass + screen else []
