"""Confusion matrices of a label task: which label a prompt answered for each reference label.

A run is a *label task* when its references form a small, repeating label set
(:func:`label_set`: 2..``MAX_LABELS`` distinct short one-line references, each used at least
twice on average, the rule ``instructions`` uses for its label-set candidates). Answers and
references are compared as ``exact_match`` compares them by default (:func:`normalise_label`:
case folded, whitespace collapsed, surrounding quotes and one trailing period dropped); an answer
that is none of the labels goes in the ``OTHER`` column.

A :class:`Confusion` gives per-label precision and recall, and :meth:`Confusion.dominant` names a
predicted label (``OTHER`` included) that took more than ``DOMINANT_SHARE`` of the rows and more
rows than its references have: a prompt whose score comes almost entirely from one class.
Pure functions over strings; the report (``aevyra-reflex report``) and the trackers render them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "DOMINANT_SHARE",
    "MAX_LABELS",
    "OTHER",
    "Confusion",
    "LabelStats",
    "confusion",
    "label_set",
    "near_miss",
    "normalise_label",
]

MAX_LABELS = 20
MAX_LABEL_CHARS = 64  # longer references are free text, not labels
DOMINANT_SHARE = 0.6
OTHER = "(other)"  # parentheses: no normalised label can be written so and collide with it
_QUOTES = "\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb"


def normalise_label(text: str) -> str:
    """``text`` as exact_match's defaults compare it: whitespace collapsed, case folded,
    surrounding quotes and one trailing period stripped."""
    flat = " ".join(text.split()).casefold().strip(_QUOTES).strip()
    return flat[:-1].rstrip() if flat.endswith(".") else flat


def label_set(references: Iterable[str | None], max_labels: int = MAX_LABELS) -> list[str]:
    """The sorted normalised labels when ``references`` (None: a row without one, left out)
    are a small repeating label set; ``[]`` when they are not (free text, too many values, or
    values that rarely repeat)."""
    refs = [r for r in references if r is not None]
    if any("\n" in r.strip() or len(r) > MAX_LABEL_CHARS for r in refs):
        return []
    counts = Counter(normalise_label(r) for r in refs)
    if not 2 <= len(counts) <= max_labels or len(refs) < 2 * len(counts) or "" in counts:
        return []
    return sorted(counts)


@dataclass(frozen=True)
class LabelStats:
    """One label's row: ``support`` rows have it as reference, ``predicted`` rows answered it,
    ``correct`` both; precision and recall are None when their denominator is 0."""

    label: str
    support: int
    predicted: int
    correct: int

    @property
    def precision(self) -> float | None:
        return self.correct / self.predicted if self.predicted else None

    @property
    def recall(self) -> float | None:
        return self.correct / self.support if self.support else None


@dataclass(frozen=True)
class Confusion:
    """Counts of (reference label, answered label) over ``n`` rows; ``columns`` are the labels
    and, when any answer was none of them, ``OTHER``. ``skipped``: rows left out (no reference,
    or a reference outside the label set)."""

    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]  # [reference][column], columns = labels (+ OTHER)
    other: bool
    skipped: int = 0

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.labels, OTHER) if self.other else self.labels

    @property
    def n(self) -> int:
        return sum(sum(row) for row in self.counts)

    def count(self, reference: str, answered: str) -> int:
        return self.counts[self.labels.index(reference)][self.columns.index(answered)]

    def column_total(self, answered: str) -> int:
        column = self.columns.index(answered)
        return sum(row[column] for row in self.counts)

    @property
    def accuracy(self) -> float | None:
        diagonal = sum(self.counts[i][i] for i in range(len(self.labels)))
        return diagonal / self.n if self.n else None

    def per_label(self) -> list[LabelStats]:
        return [
            LabelStats(label, sum(self.counts[i]), self.column_total(label), self.counts[i][i])
            for i, label in enumerate(self.labels)
        ]

    def dominant(self, share: float = DOMINANT_SHARE) -> tuple[str, int] | None:
        """``(answered, rows)`` when one answered column took more than ``share`` of the rows
        and more rows than its references have (``OTHER`` has none); else None."""
        if not self.n:
            return None
        top = max(self.columns, key=self.column_total)
        rows = self.column_total(top)
        support = sum(self.counts[self.labels.index(top)]) if top in self.labels else 0
        return (top, rows) if rows > share * self.n and rows > support else None

    def warning(self, who: str) -> str | None:
        """One plain line when :meth:`dominant` holds (``who``: "the baseline", "the winner")."""
        found = self.dominant()
        if found is None:
            return None
        top, rows = found
        if top == OTHER:
            return f"{who} answered outside the label set for {rows} of {self.n} rows"
        support = sum(self.counts[self.labels.index(top)])
        return (
            f"{who} answered {top!r} for {rows} of {self.n} rows (the references have {support}):"
            " its score comes mostly from that one label"
        )

    def rows(self) -> list[dict[str, object]]:
        """The matrix as table rows, one per reference label: its counts per answered label
        (``answered: <label>`` columns), support, precision and recall."""
        stats = self.per_label()
        return [
            {
                "reference": label,
                **{f"answered: {c}": n for c, n in zip(self.columns, self.counts[i], strict=True)},
                "support": stats[i].support,
                "precision": stats[i].precision,
                "recall": stats[i].recall,
            }
            for i, label in enumerate(self.labels)
        ]

    def to_dict(self) -> dict[str, object]:
        return {
            "labels": list(self.labels),
            "columns": list(self.columns),
            "counts": [list(row) for row in self.counts],
            "n": self.n,
            "skipped": self.skipped,
            "accuracy": self.accuracy,
            "per_label": [
                {**s.__dict__, "precision": s.precision, "recall": s.recall}
                for s in self.per_label()
            ],
            "dominant": self.dominant(),
        }


def confusion(pairs: Iterable[tuple[str | None, str]], labels: Sequence[str]) -> Confusion:
    """The matrix of ``(reference, answer)`` pairs over ``labels`` (normalised, from
    :func:`label_set`); an answer outside them counts as ``OTHER``."""
    index = {label: i for i, label in enumerate(labels)}
    grid = [[0] * (len(labels) + 1) for _ in labels]
    skipped = 0
    for reference, answer in pairs:
        row = index.get(normalise_label(reference)) if reference is not None else None
        if row is None:
            skipped += 1
            continue
        grid[row][index.get(normalise_label(answer), len(labels))] += 1
    other = any(row[-1] for row in grid)
    counts = tuple(tuple(row if other else row[:-1]) for row in grid)
    return Confusion(tuple(labels), counts, other, skipped)


NEAR_MISS_RATIO = 0.8  # difflib similarity from which an off-label answer is a typo of a label


def near_miss(answer: str, labels: Sequence[str]) -> str | None:
    """The label an answer outside ``labels`` nearly is (``sports`` for ``sport``, ``technology``
    for ``tech``, ``the label is sport`` for ``sport``), or None: one is a prefix of the other
    (3 characters at least), the label is one of the answer's words, or they are spelled
    alike (difflib ratio at least ``NEAR_MISS_RATIO``). An answer in the label set is None."""
    import difflib

    flat = normalise_label(answer)
    if not flat or flat in labels:
        return None
    words = set(flat.replace(",", " ").replace(":", " ").split())
    for label in labels:
        short, long = sorted((flat, label), key=len)
        if (len(short) >= 3 and long.startswith(short)) or label in words:
            return label
    ratios = [(difflib.SequenceMatcher(None, flat, label).ratio(), label) for label in labels]
    ratio, label = max(ratios, default=(0.0, ""))
    return label if ratio >= NEAR_MISS_RATIO else None
