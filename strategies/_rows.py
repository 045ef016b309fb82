"""How one evaluated example is shown to the reasoning model (``iterative``, ``gepa``, ``pdo``).

A row is its input, output, reference, score, error and metric feedback, each cut to the
strategy's ``max_chars``; then, when there is one, the failure kind of a tool-call or JSON answer
(``failure: wrong function``, :func:`reflex.api.failure_kind`) and the row's feedback column
(``--feedback-field critique`` shows ``critique: ...``, cut the same way). Only train rows are
shown (strategies look rows up in ``ctx.train``), so a held-out row's column never is.

In pipeline mode (``Sample.trace`` is not None) the row also shows why the pipeline failed, if
it did, and the trace of named steps: each step's input and output cut to ``max_chars``, the
whole trace to ``TRACE_FACTOR * max_chars``; a cut says so with a marker.
Outside pipeline mode, and without a failure kind or a feedback column, a row is exactly what
it was before traces existed (cached reasoning answers depend on the prompt's bytes).
"""

from __future__ import annotations

import json
from typing import Any

from reflex.api import Example, Sample, failure_kind

__all__ = [
    "TRACE_FACTOR",
    "clip",
    "evidence_lines",
    "pipeline_notes",
    "sample_row",
    "trace_text",
]

TRACE_FACTOR = 4  # the trace of one example gets this many times the per-field budget


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} …[+{len(text) - limit} chars cut]"


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def trace_text(trace: list[dict[str, Any]], step_chars: int, total_chars: int) -> str:
    """A pipeline trace's named steps as text; ``""`` for an empty trace.

    Each step's input and output is cut to ``step_chars``, the steps together to ``total_chars``.
    """
    if not trace:
        return ""
    blocks = [
        f"  step {n} ({_text(step.get('name', '?'))}):\n"
        f"    input: {clip(_text(step.get('input')), step_chars)}\n"
        f"    output: {clip(_text(step.get('output')), step_chars)}"
        for n, step in enumerate(trace, 1)
    ]
    shown: list[str] = []
    used = full = 0
    for block in blocks:
        if used + len(block) > total_chars:
            if total_chars > used:
                shown.append(block[: total_chars - used] + " …[cut]")
            break
        shown.append(block)
        used, full = used + len(block), full + 1
    text = "\n".join(shown)
    if full < len(blocks):
        text += (
            f"\n  …[trace cut to {total_chars} chars: "
            f"{len(blocks) - full} of {len(blocks)} steps not shown in full]"
        )
    return f"pipeline trace ({len(trace)} steps):\n{text}"


def sample_row(
    example: Example,
    sample: Sample,
    cut: int,
    *,
    reference: bool = True,
    error: bool = True,
    feedback_field: str | None = None,
) -> str:
    """One example as the reasoning model sees it (see the module docstring).

    ``error`` shows ``sample.error`` outside pipeline mode too; in pipeline mode it always shows.
    ``feedback_field``: the dataset column shown as the row's feedback (the run's
    ``ctx.settings.feedback_field``).
    """
    pipeline = sample.trace is not None
    lines = [f"input: {example.input[:cut]}", f"output: {sample.output[:cut]}"]
    if reference and example.ideal is not None:
        lines.append(f"expected: {example.ideal[:cut]}")
    lines.append(f"score: {sample.score if sample.score is not None else 'n/a'}")
    if sample.error and (error or pipeline):
        lines.append(f"error: {sample.error[:cut]}")
    for name, text in sample.feedback.items():
        if not (pipeline and text == sample.error):  # a failed pipeline's reason, once is enough
            lines.append(f"feedback ({name}): {text}")
    lines += evidence_lines(example, sample, cut, feedback_field)
    shown = trace_text(sample.trace or [], cut, TRACE_FACTOR * cut)
    if shown:
        lines.append(shown)
    return "\n".join(lines)


def evidence_lines(
    example: Example, sample: Sample, cut: int, feedback_field: str | None = None
) -> list[str]:
    """The sample's failure kind and the row's feedback column, as row lines (none: ``[]``)."""
    lines = []
    kind = failure_kind(sample)
    if kind is not None:
        lines.append(f"failure: {kind}")
    value = example.metadata.get(feedback_field) if feedback_field else None
    if value is not None:
        lines.append(f"{feedback_field}: {_text(value)[:cut]}")
    return lines


def pipeline_notes(sample: Sample, cut: int) -> str:
    """A pipeline sample's failure reason and trace, for rows shown in another shape (``pdo``).

    ``""`` outside pipeline mode.
    """
    if sample.trace is None:
        return ""
    lines = [f"error: {sample.error[:cut]}"] if sample.error else []
    shown = trace_text(sample.trace, cut, TRACE_FACTOR * cut)
    if shown:
        lines.append(shown)
    return "\n".join(lines)
