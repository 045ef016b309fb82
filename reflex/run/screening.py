"""The checks a candidate passes before it may become the best: template, leakage and guards.

A chat template's candidates must keep its messages and placeholders exactly
(:func:`reflex.data.templates.template_problem`), a prompt led by a ``<tools>`` section every
fixed line of it (:func:`reflex.data.tool_text.tools_problem`), and, with a JSON-schema
``response_format``, every schema property name the initial prompt names (its output-format
instructions, :func:`format_names`): all checked before any call is paid for them. The format
guard (:meth:`CandidateScreen.format_screen`) compares a candidate's schema-invalid and
tool-call-format failures with the incumbent's on the same minibatch, before val.
Held-out (val, test) text is indexed once per run (:mod:`reflex.checks.leakage`); each candidate
is screened for copied spans and implausible gains, and ``--guard`` metrics must not regress on
val beyond their tolerance against the initial prompt.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reflex.checks.leakage import LeakageFlag, LeakageGuard
from reflex.config import RunConfig
from reflex.data.demos import split_chat_demos
from reflex.data.templates import is_template, template_problem
from reflex.data.tool_text import strip_tools_section, tools_problem
from reflex.result import EvalSnapshot, Example, Sample

__all__ = [
    "FORMAT_OBJECTIVES",
    "CandidateScreen",
    "format_failures",
    "format_names",
    "prompt_length_problem",
    "refused_snapshot",
]

# Objectives whose 0 means the answer broke its format: not JSON, not valid against the schema,
# or no tool call where one was expected (or one where none was).
FORMAT_OBJECTIVES = ("json_match.parse", "json_match.schema", "tool_call.format")


def _schema_properties(schema: object) -> list[str]:
    """Every property name of a JSON Schema, nested ones too, in order of first appearance."""
    names: list[str] = []
    if isinstance(schema, Mapping):
        props = schema.get("properties")
        if isinstance(props, Mapping):
            names += [str(k) for k in props]
        for value in schema.values():
            names += _schema_properties(value)
    elif isinstance(schema, list):
        for value in schema:
            names += _schema_properties(value)
    return list(dict.fromkeys(names))


def _names_word(text: str, name: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text) is not None


def format_names(response_format: Mapping[str, Any] | None, prompt: str) -> list[str]:
    """The JSON-schema property names ``prompt`` names (its output-format instructions, which
    every candidate must keep naming); [] without a ``json_schema`` response format."""
    if not response_format or response_format.get("type") != "json_schema":
        return []
    inner = response_format.get("json_schema")
    schema = inner.get("schema") if isinstance(inner, Mapping) else None
    text = strip_tools_section(prompt)
    return [name for name in _schema_properties(schema) if _names_word(text, name)]


def format_failures(snapshot: EvalSnapshot) -> dict[tuple[str, str], bool]:
    """Per (row, model) answer that a format objective scored: True when it broke the format."""
    out: dict[tuple[str, str], bool] = {}
    for sample in snapshot.samples:
        values = [sample.objectives[k] for k in FORMAT_OBJECTIVES if k in sample.objectives]
        if values and sample.error is None:
            out[(sample.example_id, sample.model)] = any(v == 0 for v in values)
    return out


def refused_snapshot(
    prompt: str, split: str, rows: Sequence[Example], models: Sequence[str], reason: str
) -> EvalSnapshot:
    """What evaluating a refused candidate gives: every row errored, no call made."""
    samples = tuple(
        Sample(e.id, model, "", None, error=f"refused: {reason}") for model in models for e in rows
    )
    return EvalSnapshot(prompt, split, 0.0, {}, samples=samples, n_errors=len(samples))


def prompt_length_problem(limit: int | None, prompt: str, what: str) -> str | None:
    """Why ``prompt`` is over ``--max-prompt-tokens`` (demos included), or None."""
    if limit is None:
        return None
    from reflex.models.tokens import TOKENIZER, count_tokens

    tokens = count_tokens(prompt)
    if tokens <= limit:
        return None
    return (
        f"{what} is {tokens} tokens ({TOKENIZER}), over --max-prompt-tokens {limit}: a "
        "longer prompt costs more on every call"
    )


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
        body = split_chat_demos(strip_tools_section(initial_prompt))[0]
        self._template = body if is_template(body) else None
        self._initial = initial_prompt
        # Both format checks are on unless --no-format-guard.
        fmt = config.response_format if config.format_guard else None
        self._format_names = format_names(fmt, initial_prompt)
        self._format_guard = config.format_guard
        self._editable = config.rewrite_messages
        self._max_tokens = config.max_prompt_tokens
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
        body = split_chat_demos(strip_tools_section(prompt))[0]
        return template_problem(self._template, body, self._editable)

    def refusal(self, prompt: str) -> tuple[str, str] | None:
        """``(guard, reason)`` when ``prompt`` breaks what every candidate keeps (the chat
        template, the tools' fixed lines, the output-format names), else None: no call made."""
        problem = self.template(prompt)
        if problem is not None:
            return "chat template guard", problem
        problem = tools_problem(self._initial, prompt, keep_section=False)
        if problem is not None:
            return "tool descriptions guard", problem
        text = strip_tools_section(prompt)
        dropped = [name for name in self._format_names if not _names_word(text, name)]
        if dropped:
            return "format instructions guard", (
                "the revised prompt dropped the output-format instructions: no longer names "
                f"{dropped[0]!r}; keep naming every field of the JSON schema the prompt names "
                f"({', '.join(repr(n) for n in self._format_names)})"
            )
        problem = prompt_length_problem(self._max_tokens, prompt, "the candidate")
        return None if problem is None else ("prompt length guard", problem)

    @property
    def format_names(self) -> list[str]:
        """The schema property names every candidate must keep naming."""
        return list(self._format_names)

    def format_screen(self, candidate: EvalSnapshot, incumbent: EvalSnapshot) -> str | None:
        """Why ``candidate`` is rejected before val: on the answers both were scored on, more of
        its answers break the format (JSON parse or schema, tool-call format) than the
        incumbent's. None when they do not, when the run scores no format, or with the guard off."""
        if not self._format_guard:
            return None
        after, before = format_failures(candidate), format_failures(incumbent)
        shared = [key for key in after if key in before]
        if not shared:
            return None
        bad, was = sum(after[k] for k in shared), sum(before[k] for k in shared)
        if bad <= was:
            return None
        return (
            f"format guard: {bad} of {len(shared)} answers on the minibatch break the output "
            f"format (not JSON, schema-invalid, or no tool call where one was expected) vs "
            f"{was} of {len(shared)} for the incumbent"
        )

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
