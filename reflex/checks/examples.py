"""The test rows of a run, baseline beside winner: what each answered, its scores, what changed.

:func:`compare_rows` pairs the baseline's and the final's samples by (example, model) and marks
each row ``regressed`` / ``improved`` (the combined score went down / up), ``same`` (equal
scores) or ``unscored`` (a side has no score: no reference, or an error), in that order, flipped
rows first. :func:`label_matrices` gives the baseline's and the winner's confusion matrices when
the references form a label set (:mod:`reflex.checks.confusion`). Pure: the report and the
trackers read the records and render these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from reflex.checks.confusion import Confusion, confusion, label_set
from reflex.result import EvalSnapshot, Example, Sample

__all__ = ["CHANGES", "ExampleRow", "change_of", "compare_rows", "label_matrices"]

CHANGES = ("regressed", "improved", "unscored", "same")  # the order rows are shown in


@dataclass(frozen=True)
class ExampleRow:
    """One test (example, model): its input and reference (None when the dataset is not at
    hand), and each side's answer and combined score (None: not scored or not evaluated)."""

    example_id: str
    model: str
    input: str | None
    reference: str | None
    baseline_output: str | None
    baseline_score: float | None
    final_output: str
    final_score: float | None
    change: str


def change_of(before: float | None, after: float | None) -> str:
    """``regressed``, ``improved``, ``same`` or ``unscored`` (a side has no score)."""
    if before is None or after is None:
        return "unscored"
    if after > before:
        return "improved"
    return "regressed" if after < before else "same"


def compare_rows(
    baseline: EvalSnapshot | None, final: EvalSnapshot, examples: Mapping[str, Example]
) -> list[ExampleRow]:
    """One row per final sample, flipped rows first (regressed, improved, unscored, same);
    within a group, in the final's order. ``examples``: id -> row, may be empty."""
    before: dict[str, Sample] = {s.key: s for s in baseline.samples} if baseline else {}
    rows = []
    for sample in final.samples:
        base = before.get(sample.key)
        example = examples.get(sample.example_id)
        base_score = base.score if base is not None else None
        rows.append(
            ExampleRow(
                example_id=sample.example_id,
                model=sample.model,
                input=example.input if example is not None else None,
                reference=example.ideal if example is not None else None,
                baseline_output=base.output if base is not None else None,
                baseline_score=base_score,
                final_output=sample.output,
                final_score=sample.score,
                change=change_of(base_score, sample.score),
            )
        )
    return sorted(rows, key=lambda row: CHANGES.index(row.change))


def label_matrices(
    rows: Iterable[ExampleRow], references: Iterable[str | None]
) -> dict[str, Confusion]:
    """``{"baseline": ..., "final": ...}`` when ``references`` (the dataset's, all splits) form
    a label set and the rows have references; ``{}`` otherwise (not a label task)."""
    labels = label_set(references)
    rows = [row for row in rows if row.reference is not None]
    if not labels or not rows:
        return {}
    matrices = {"final": confusion(((r.reference, r.final_output) for r in rows), labels)}
    paired = [r for r in rows if r.baseline_output is not None]
    if paired:
        pairs = ((r.reference, r.baseline_output or "") for r in paired)
        matrices = {"baseline": confusion(pairs, labels), **matrices}
    return matrices
