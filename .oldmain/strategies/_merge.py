"""GEPA candidates and merges (crossover of two lineages that improved different components).

Two candidates ``a`` and ``b`` merge when neither descends from the other and, since their
latest common ancestor, ``a`` changed only components that ``b`` left alone (and the other way
round). The merge takes the ancestor's components, ``a``'s changes and ``b``'s changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Candidate", "ancestors", "find_merge"]


@dataclass(frozen=True)
class Candidate:
    """One candidate: its components, parents (ids), what changed and how it got here."""

    id: int
    components: dict[str, str]
    parents: tuple[int, ...]
    changed: tuple[str, ...]
    kind: str  # "seed", "reflection" or "merge"
    iteration: int
    minibatch: tuple[float, float] | None = None  # (parent score, child score) at acceptance

    def to_lineage(self, pool_score: float) -> dict[str, object]:
        """The JSON record of this candidate in ``result.lineage``."""
        return {
            "id": self.id,
            "parents": list(self.parents),
            "changed": list(self.changed),
            "kind": self.kind,
            "iteration": self.iteration,
            "val_score": pool_score,
            "minibatch": list(self.minibatch) if self.minibatch else None,
        }


def ancestors(cands: Sequence[Candidate], cid: int) -> set[int]:
    """Every ancestor id of candidate ``cid`` (not itself)."""
    seen: set[int] = set()
    stack = list(cands[cid].parents)
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(cands[current].parents)
    return seen


def _diff(base: Mapping[str, str], other: Mapping[str, str]) -> set[str]:
    return {name for name, text in other.items() if base.get(name) != text}


def _merge(
    cands: Sequence[Candidate], a: Candidate, b: Candidate
) -> tuple[dict[str, str], list[str]] | None:
    up_a, up_b = ancestors(cands, a.id), ancestors(cands, b.id)
    if a.id in up_b or b.id in up_a:
        return None
    common = up_a & up_b
    if not common:
        return None
    base = cands[max(common)].components
    da, db = _diff(base, a.components), _diff(base, b.components)
    if not da or not db or da & db:
        return None
    merged = {
        name: a.components[name] if name in da else b.components[name] if name in db else text
        for name, text in base.items()
    }
    return merged, sorted(da | db)


def find_merge(
    cands: Sequence[Candidate],
    scores: Mapping[str, Mapping[str, float]],
    tried: set[tuple[int, int]],
) -> tuple[Candidate, Candidate, dict[str, str], list[str]] | None:
    """The untried mergeable pair with the highest summed mean score, and its merge, or None."""

    def mean(c: Candidate) -> float:
        row = scores.get(str(c.id), {})
        return sum(row.values()) / len(row) if row else 0.0

    known = {tuple(sorted(c.components.items())) for c in cands}
    ranked = sorted(cands, key=lambda c: (-mean(c), c.id))
    pairs = [(x, y) for i, x in enumerate(ranked) for y in ranked[i + 1 :]]
    pairs.sort(key=lambda p: (-(mean(p[0]) + mean(p[1])), p[0].id, p[1].id))
    for x, y in pairs:
        a, b = (x, y) if x.id < y.id else (y, x)
        if (a.id, b.id) in tried:
            continue
        found = _merge(cands, a, b)
        if found is not None and tuple(sorted(found[0].items())) not in known:
            return a, b, found[0], found[1]
    return None
