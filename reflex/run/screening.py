"""The checks a candidate passes before it may become the best: template, leakage and guards.

A chat template's candidates must keep its messages and placeholders exactly
(:func:`reflex.data.templates.template_problem`), checked before any call is paid for them.
Held-out (val, test) text is indexed once per run (:mod:`reflex.checks.leakage`); each candidate
is screened for copied spans and implausible gains, and ``--guard`` metrics must not regress on
val beyond their tolerance against the initial prompt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from reflex.checks.leakage import LeakageFlag, LeakageGuard
from reflex.config import RunConfig
from reflex.data.demos import split_chat_demos
from reflex.data.templates import is_template, template_problem
from reflex.result import EvalSnapshot, Example, Sample

__all__ = ["CandidateScreen", "refused_snapshot"]


def refused_snapshot(
    prompt: str, split: str, rows: Sequence[Example], models: Sequence[str], reason: str
) -> EvalSnapshot:
    """What evaluating a refused candidate gives: every row errored, no call made."""
    samples = tuple(
        Sample(e.id, model, "", None, error=f"refused: {reason}") for model in models for e in rows
    )
    return EvalSnapshot(prompt, split, 0.0, {}, samples=samples, n_errors=len(samples))


class CandidateScreen:
    """Leakage flags and guard violations of each candidate, for ``RunContext``."""

    def __init__(
        self,
        config: RunConfig,
        *,
        train: Iterable[Example],
        held_out: Mapping[str, Iterable[Example]],
        seed_texts: Iterable[str],
        initial_val: EvalSnapshot | None,
        initial_prompt: str = "",
    ) -> None:
        body = split_chat_demos(initial_prompt)[0]
        self._template = body if is_template(body) else None
        self._editable = config.rewrite_messages
        self._guard = LeakageGuard.for_run(
            config, train=train, held_out=held_out, seed_texts=seed_texts
        )
        self._guards = dict(config.guards)
        self._initial_val = initial_val
        # (prompt, span flags) from the latest ``screen``, for that prompt's record.
        self._screened: tuple[str, list[LeakageFlag]] | None = None

    def screen(self, prompt: str) -> str | None:
        """Screen ``prompt`` now (kept for its record); the strict rejection reason or None."""
        flags = self._guard.screen(prompt)
        self._screened = (prompt, flags)
        return self._guard.reject(flags)

    def template(self, prompt: str) -> str | None:
        """Why ``prompt`` breaks the run's chat template, or None (always None without one)."""
        if self._template is None:
            return None
        return template_problem(self._template, split_chat_demos(prompt)[0], self._editable)

    def span_flags(
        self, prompt: str, failed: str | None, rejected: str | None
    ) -> list[LeakageFlag]:
        """Span flags for the candidate's record.

        From ``screen`` when it screened this prompt last, else screened now unless the
        candidate failed or was rejected before val.
        """
        screened, self._screened = self._screened, None
        if failed is not None:
            return []
        if screened is not None and screened[0] == prompt:
            return list(screened[1])
        return self._guard.screen(prompt) if rejected is None else []

    def gain(
        self,
        measured: float,
        val: float,
        best_val: float | None,
        change: float | None,
        rows: tuple[int, int],
    ) -> list[LeakageFlag]:
        """Flags for a val gain the candidate's own measurement does not explain."""
        return self._guard.gain(measured, val, best_val, change, rows)

    def reject(self, flags: Sequence[LeakageFlag]) -> str | None:
        """The rejection reason under ``strict_leakage`` when there are flags, else None."""
        return self._guard.reject(flags)

    def became_best(self, measured: float | None) -> None:
        self._guard.became_best(measured)

    def guard_violation(self, val: EvalSnapshot | None) -> str | None:
        """A reason when a guard metric regressed on val beyond its tolerance, else None."""
        if val is None or self._initial_val is None:
            return None
        for name, tolerance in self._guards.items():
            before = self._initial_val.scores_by_metric.get(name)
            after = val.scores_by_metric.get(name)
            if before is not None and after is not None and after < before - tolerance:
                return f"guard {name} regressed {before:.3f} -> {after:.3f} (tolerance {tolerance})"
        return None
