"""Pairwise judging: which of two outputs better satisfies the judge's rubric, row by row.

Used by strategies that compare prompts head to head (``pdo``) on *label-free* runs scored by a
model-graded metric: with no reference, an absolute grade per output is noisy, while "A or B?"
is a question a judge answers more reliably.

Position bias: every row is asked in both orders (A first, then B first). A side wins the row
only when the judge prefers it in both orders; a judge that always picks the first answer (or
the second) therefore produces a tie, never a win. Each order's reply that cannot be parsed is
retried once with a repair turn (a new message, so the cache does not replay the bad reply);
if it is still unusable the row is a tie with ``error`` set, never a silent win.

Calls go through a :data:`reflex.types.JudgeCall` (the run's client, "judge" role), so they
are cached, counted and share the run's concurrency limit. Prompts are the named templates
``pairwise.system``, ``pairwise.compare`` and ``pairwise.retry`` (see ``reflex.judging.reasoning``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from typing import Literal

from reflex.judging.judge import LLMJudge, _conversation
from reflex.judging.reasoning import render
from reflex.result import PairOutcome
from reflex.types import Example, JudgeCall, ModelGradedMetric

__all__ = ["PairwiseParseError", "compare_all", "parse_preference", "rubric_text"]

Preference = Literal["A", "B", "tie"]
_ANSWER = re.compile(
    r"\b(?:answer|verdict|winner|choice)\b\W{0,3}(?:is\s+)?\W{0,3}(A|B|tie)\b", re.I
)
_ALONE = re.compile(r"^\W*(A|B|tie)\W*$", re.I)


class PairwiseParseError(ValueError):
    """The judge's reply names no preference; the message says what was expected."""


def parse_preference(reply: str) -> Preference:
    """``"A"``, ``"B"`` or ``"tie"`` from the reply; raise PairwiseParseError otherwise."""
    text = reply.strip()
    tagged = re.findall(r"<answer>\s*(.*?)\s*</answer>", text, flags=re.S | re.I)
    for candidate in [*tagged[-1:], text.splitlines()[-1] if text else "", text]:
        match = _ALONE.match(candidate) or _ANSWER.search(candidate)
        if match:
            word = match.group(1).lower()
            return "tie" if word == "tie" else "A" if word == "a" else "B"
    raise PairwiseParseError("no verdict found: answer with exactly A, B or tie")


def rubric_text(metric: ModelGradedMetric) -> str:
    """What the judge grades, as bullet lines: an LLMJudge's criteria, else the metric's name."""
    if isinstance(metric, LLMJudge):
        lines = [f"- {c.name}: {c.description}" for c in metric.rubric.criteria]
        if metric.rubric.instructions:
            lines.append(metric.rubric.instructions)
        return "\n".join(lines)
    return f"- {metric.name}: the quality this metric measures"


async def _prefer(
    call: JudgeCall, messages: list[dict[str, str]], templates: Mapping[str, str]
) -> tuple[Preference | None, str]:
    """Ask once, retry once on an unusable reply: ``(preference, "")`` or ``(None, reason)``."""
    reason = ""
    for _attempt in (1, 2):
        reply = await call(messages)
        try:
            return parse_preference(reply), ""
        except PairwiseParseError as exc:
            reason = str(exc)
            repair = render("pairwise.retry", templates, error=reason)
            messages = [
                *messages,
                {"role": "assistant", "content": reply},
                {"role": "user", "content": repair},
            ]
    return None, f"unusable pairwise verdict after 2 attempts: {reason}"


def _messages(
    rubric: str, example: Example, a: str, b: str, templates: Mapping[str, str]
) -> list[dict[str, str]]:
    user = render("pairwise.compare", templates, input=_conversation(example), first=a, second=b)
    system = render("pairwise.system", templates, rubric=rubric)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


_AS_FIRST = {"A": "first", "B": "second", "tie": "tie"}
_AS_SECOND = {"A": "second", "B": "first", "tie": "tie"}


async def _one(
    call: JudgeCall, rubric: str, row: tuple[Example, str, str], templates: Mapping[str, str]
) -> PairOutcome:
    example, first, second = row
    straight, swapped = await asyncio.gather(
        _prefer(call, _messages(rubric, example, first, second, templates), templates),
        _prefer(call, _messages(rubric, example, second, first, templates), templates),
    )
    orders = (
        _AS_FIRST[straight[0]] if straight[0] else None,
        _AS_SECOND[swapped[0]] if swapped[0] else None,
    )
    error = "; ".join(e for e in (straight[1], swapped[1]) if e) or None
    if error is not None:
        return PairOutcome(0.5, orders, error)
    points = {"first": 1.0, "second": 0.0, "tie": 0.5}
    a, b = orders
    assert a is not None and b is not None
    # The mean over both orders: agreement wins the row, opposite picks (position bias) tie.
    share = (points[a] + points[b]) / 2
    return PairOutcome(share, orders)


async def compare_all(
    call: JudgeCall,
    metric: ModelGradedMetric,
    rows: Sequence[tuple[Example, str, str]],
    templates: Mapping[str, str] | None = None,
) -> list[PairOutcome]:
    """One :class:`PairOutcome` per ``(example, first output, second output)``, in order."""
    rubric = rubric_text(metric)
    return list(await asyncio.gather(*(_one(call, rubric, row, templates or {}) for row in rows)))
