"""Know a trivial winner: a label task's prompt against the constant answer and the label prior.

On a label task (:func:`reflex.checks.confusion.label_set`) a prompt that answers one label for
every row scores that label's share of the rows without reading a single input. A
:class:`LabelBaseline` holds, for some rows' references, each label's share (what answering that
label on every row scores: the *constant* of that label), the majority label and its share (the
best constant), and the label prior's accuracy (answering at random by the labels' shares:
the sum of the squared shares). :meth:`LabelBaseline.check` compares a prompt's answers on
those rows with them (:class:`LabelCheck`): its label accuracy (the answer, normalised as
exact_match compares it, equals the reference), whether that beats the constant, whether its
answers collapsed onto one label (:meth:`Confusion.dominant`), and the answers outside the
label set, counted, with the label each nearly is (:func:`reflex.checks.confusion.near_miss`).

The acceptance gate (:mod:`reflex.run.acceptance`) checks every candidate on val; the engine
checks the winner on test (``OptimizationResult.label_check``); ``check`` checks the prompt it
scores. Pure functions over strings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reflex.checks.confusion import confusion, label_set, near_miss, normalise_label
from reflex.result import Sample

__all__ = [
    "LabelBaseline",
    "LabelCheck",
    "label_baseline",
    "label_warnings",
    "snapshot_check",
]


@dataclass(frozen=True)
class LabelCheck:
    """A prompt's answers on a label task's rows against the constant answer (see module)."""

    rows: int
    accuracy: float
    constant: float
    constant_label: str
    prior: float
    collapsed: str | None  # the label (or "(other)") most answers went to, when they collapsed
    off_label: dict[str, int] = field(default_factory=dict)  # answer -> rows, outside the set
    near_misses: dict[str, str] = field(default_factory=dict)  # off-label answer -> its label

    @property
    def beats_constant(self) -> bool:
        return self.accuracy > self.constant + 1e-12

    @property
    def trivial(self) -> bool:
        """Answers collapsed onto one label, or the prompt does not beat the constant."""
        return self.collapsed is not None or not self.beats_constant

    @property
    def off_label_rows(self) -> int:
        return sum(self.off_label.values())

    @property
    def near_miss_rows(self) -> int:
        return sum(n for answer, n in self.off_label.items() if answer in self.near_misses)

    def to_dict(self) -> dict[str, object]:
        return {
            "rows": self.rows,
            "accuracy": self.accuracy,
            "constant": self.constant,
            "constant_label": self.constant_label,
            "prior": self.prior,
            "beats_constant": self.beats_constant,
            "collapsed": self.collapsed,
            "trivial": self.trivial,
            "off_label_rows": self.off_label_rows,
            "near_miss_rows": self.near_miss_rows,
            "off_label": dict(self.off_label),
            "near_misses": dict(self.near_misses),
        }

    def warning(self, who: str, split: str) -> str | None:
        """One plain line when :attr:`trivial` holds (``who``: "the winner")."""
        const = f"answering {self.constant_label!r} on every row scores {self.constant:.3f}"
        if self.collapsed is not None:
            return (
                f"{who} answered {self.collapsed!r} on most {split} rows (label accuracy "
                f"{self.accuracy:.3f}; {const}): its gain may be the output format, not the task"
            )
        if not self.beats_constant:
            return (
                f"{who} does not beat the constant answer on {split} (label accuracy "
                f"{self.accuracy:.3f}; {const}; the label prior {self.prior:.3f})"
            )
        return None


@dataclass(frozen=True)
class LabelBaseline:
    """Each label's share of some rows' references (the constant answer's score) and the prior."""

    labels: tuple[str, ...]
    shares: dict[str, float]
    rows: int

    @property
    def majority(self) -> str:
        return max(self.labels, key=lambda label: (self.shares[label], -self.labels.index(label)))

    @property
    def constant(self) -> float:
        return self.shares[self.majority]

    @property
    def prior(self) -> float:
        return sum(share * share for share in self.shares.values())

    def check(self, pairs: Iterable[tuple[str | None, str]]) -> LabelCheck:
        """``pairs`` of (reference, answer) for rows of this set (other rows are left out)."""
        kept = [(ref, answer) for ref, answer in pairs if ref is not None]
        kept = [(r, a) for r, a in kept if normalise_label(r) in self.labels]
        right = sum(1 for r, a in kept if normalise_label(a) == normalise_label(r))
        matrix = confusion(kept, self.labels)
        dominant = matrix.dominant()
        outside = Counter(a.strip() for _, a in kept if normalise_label(a) not in self.labels)
        misses = {a: label for a in outside if (label := near_miss(a, self.labels)) is not None}
        return LabelCheck(
            rows=len(kept),
            accuracy=right / len(kept) if kept else 0.0,
            constant=self.constant,
            constant_label=self.majority,
            prior=self.prior,
            collapsed=dominant[0] if dominant else None,
            off_label=dict(outside.most_common()),
            near_misses=misses,
        )


def label_baseline(
    references: Sequence[str | None], labels: Sequence[str] | None = None
) -> LabelBaseline | None:
    """The baseline of these references over ``labels`` (default: their own
    :func:`label_set`); None when they are not a label task or no reference is a label."""
    labels = list(labels) if labels is not None else label_set(references)
    if not labels:
        return None
    counts = Counter(normalise_label(r) for r in references if r is not None)
    total = sum(counts[label] for label in labels)
    if not total:
        return None
    shares = {label: counts[label] / total for label in labels}
    return LabelBaseline(tuple(labels), shares, total)


def snapshot_check(
    references: Mapping[str, str | None], labels: Sequence[str], samples: Iterable[Sample]
) -> dict[str, object] | None:
    """A prompt's :class:`LabelCheck` on the rows of ``samples`` (``references`` by example id;
    ``labels``: the task's label set), as a record holds it, with each label's share of those
    rows (``shares``); None when no row has a label reference."""
    kept = list(samples)
    baseline = label_baseline([references.get(s.example_id) for s in kept], labels)
    if baseline is None:
        return None
    check = baseline.check((references.get(s.example_id), s.output) for s in kept)
    return {**check.to_dict(), "shares": dict(baseline.shares)}


def label_warnings(
    check: Mapping[str, Any] | None, split: str = "test", who: str = "the winner"
) -> list[dict[str, str]]:
    """``trivial_winner`` when a record's label check (:func:`snapshot_check`) says the winner
    collapsed onto one label or does not beat the constant answer; ``off_label_answers`` when
    some of its answers were outside the label set (the near misses named)."""
    if not check:
        return []
    out = []
    verdict = LabelCheck(
        rows=int(check["rows"]),
        accuracy=float(check["accuracy"]),
        constant=float(check["constant"]),
        constant_label=str(check["constant_label"]),
        prior=float(check["prior"]),
        collapsed=check.get("collapsed"),
    ).warning(who, split)
    if verdict is not None:
        out.append({"kind": "trivial_winner", "message": verdict})
    off = int(check.get("off_label_rows") or 0)
    if off:
        misses = dict(check.get("near_misses") or {})
        shown = ", ".join(f"{a!r} for {label!r}" for a, label in list(misses.items())[:5])
        near = f" ({check.get('near_miss_rows')} near misses: {shown})" if misses else ""
        message = (
            f"{who} answered outside the label set on {off} of {check['rows']} {split} "
            f"rows{near}: a label-list or format rule may fix them"
        )
        out.append({"kind": "off_label_answers", "message": message})
    return out
