"""The acceptance gate: when a candidate replaces the best prompt, and the evidence for it.

A run's ``accept`` rule (``RunConfig.accept``, ``--accept``) decides whether a candidate measured
on val becomes the new best prompt (the *incumbent*):

- ``significant[:ALPHA]``: better than the incumbent on the same val rows by the
  one-sided paired sign-flip test (:func:`reflex.checks.maxstat.one_sided_p`, p < ALPHA, 0.1
  by default). With 6 val rows, one more correct row is p = 0.5: not enough.
- ``margin:M``: a mean paired val gain of at least M (and above 0).
- ``any`` (the default, the one that measured best: docs/selection.md): any higher val mean;
  the evidence below is recorded all the same.

Length can be a cost on top of any rule (``RunConfig.prompt_token_cost``,
``--prompt-token-cost C``): a candidate with more prompt tokens than the incumbent (cl100k_base,
demos included) must also gain at least ``C`` mean val score per 1,000 tokens it adds, so a
prompt doubled for +0.01 is not taken when the user prices length. A shorter candidate owes
nothing. The tokens and the price paid are on the evidence (``tokens``, ``length_cost``).

On a label task (:mod:`reflex.checks.trivial`) every candidate is also checked against the
constant answer of the majority val label: under ``significant`` and ``margin`` a candidate that
does not beat it never replaces an incumbent that does.

Every measured candidate's evidence lands on its record (``IterationRecord.evidence``): the rule,
the incumbent it was compared with (``against``: its iteration, 0 the initial prompt), the paired
rows, the mean difference, the one-sided p, whether it passed and why not, and the label check.

When the search is over, :meth:`Gate.selection` corrects the winner for having been picked from
the ``k`` candidates the run looked at on val (:func:`reflex.checks.maxstat.best_of_many` against
the initial prompt): those measured on every val row and those seen on part of them only
(:meth:`Gate.looked`: a candidate a race dropped on a rung, a trial scored on a minibatch);
under ``significant`` a winner that does not survive the correction is not kept: the initial
prompt is (docs/selection.md, "Correcting the winner of many candidates").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reflex.checks.confusion import label_set
from reflex.checks.maxstat import best_of_many, one_sided_p, paired_diffs
from reflex.checks.trivial import LabelCheck, label_baseline
from reflex.config import ACCEPT_ALPHA, RunConfig, parse_accept
from reflex.result import EvalSnapshot, Example

__all__ = ["Gate"]

OFF_LABEL_KEPT = 10  # off-label answers kept on a record (the most frequent)


class Gate:
    """One run's acceptance gate (see the module docstring); fed every measured candidate in
    order, so a resumed run's replay rebuilds the same state."""

    def __init__(
        self,
        rule: str,
        seed: int,
        val: Sequence[Example],
        initial_val: EvalSnapshot | None,
        train: Sequence[Example] = (),
        *,
        token_cost: float = 0.0,
        initial_prompt: str = "",
    ) -> None:
        self.rule = rule
        self.token_cost = token_cost
        self._tokens = _tokens(initial_prompt) if token_cost else 0  # the incumbent's
        self.kind, self.level = parse_accept(rule)
        self.seed = seed
        self._refs = {e.id: e.ideal for e in val}
        # The label set from train and val references (a small val split alone may not show it).
        labels = label_set(e.ideal for e in [*train, *val])
        self._labels = label_baseline([e.ideal for e in val], labels) if val and labels else None
        self._initial = initial_val.per_example() if initial_val is not None else None
        self._incumbent = (0, self._initial)
        self._beats = self._label(initial_val).beats_constant if self._checks(initial_val) else None
        self._candidates: list[tuple[int, dict[str, float]]] = []  # (iteration, diffs vs initial)
        self._initial_prompt = initial_prompt
        self._judged: set[str] = {initial_prompt}  # the prompts in _candidates, and the initial
        self._looked: dict[str, dict[str, float]] = {}  # prompt -> its val row scores seen
        self.best_iteration = 0

    @classmethod
    def for_run(
        cls,
        config: RunConfig,
        val: Iterable[Example],
        initial_val: EvalSnapshot | None,
        train: Iterable[Example],
        initial_prompt: str,
    ) -> Gate:
        """The gate of a run with this config (its rule, seed and length price)."""
        return cls(
            config.accept,
            config.seed,
            list(val),
            initial_val,
            list(train),
            token_cost=config.prompt_token_cost,
            initial_prompt=initial_prompt,
        )

    def _checks(self, snapshot: EvalSnapshot | None) -> bool:
        return self._labels is not None and snapshot is not None and bool(snapshot.samples)

    def _label(self, snapshot: EvalSnapshot | None) -> LabelCheck:
        assert self._labels is not None and snapshot is not None
        pairs = ((self._refs.get(s.example_id), s.output) for s in snapshot.samples)
        return self._labels.check(pairs)

    def judge(
        self,
        iteration: int,
        val: EvalSnapshot | None,
        selection: float | None,
        best: float | None,
        prompt: str = "",
    ) -> tuple[bool, dict[str, Any] | None]:
        """Whether the candidate of ``iteration`` (val snapshot ``val``, selection score
        ``selection``; ``best``: the incumbent's; ``prompt``: its text, priced when length is a
        cost) replaces the incumbent, and its evidence."""
        if selection is None:
            return False, None
        tokens = _tokens(prompt) if self.token_cost else 0
        owed = self.token_cost * max(0, tokens - self._tokens) / 1000
        higher = best is None or selection > best
        incumbent_at, incumbent = self._incumbent
        if val is None or incumbent is None:  # no val rows to pair: a higher score decides
            return higher, {"rule": self.rule, "against": incumbent_at, "rows": 0, "passed": higher}
        now = val.per_example()
        diffs = paired_diffs(incumbent, now)
        values = list(diffs.values())
        diff = sum(values) / len(values) if values else 0.0
        p = one_sided_p(values, seed=self.seed)
        passed, reason = self._rule(higher, diff, p)
        label = self._label(val) if self._checks(val) else None
        veto = self._veto(diff, owed, tokens, label) if passed else None
        passed, reason = passed and veto is None, veto or reason
        if self._initial is not None:
            self._candidates.append((iteration, paired_diffs(self._initial, now)))
            self._judged.add(prompt)
        if passed:
            self._incumbent, self.best_iteration = (iteration, now), iteration
            self._beats = label.beats_constant if label is not None else None
            self._tokens = tokens
        evidence: dict[str, Any] = {
            "rule": self.rule,
            "against": incumbent_at,
            "rows": len(values),
            "diff": round(diff, 6),
            "p": round(p, 6),
            "passed": passed,
        }
        if self.token_cost:
            evidence["tokens"], evidence["length_cost"] = tokens, round(owed, 6)
        if reason and not passed:
            evidence["reason"] = reason
        if label is not None:
            evidence["label"] = _kept(label.to_dict())
        return passed, evidence

    def _veto(self, diff: float, owed: float, tokens: int, label: LabelCheck | None) -> str | None:
        """Why a candidate its rule passed is refused all the same: its extra tokens are not
        paid for by its gain, or (not under ``any``) it no longer beats the constant answer
        that the incumbent beat."""
        if owed and diff < owed:
            return (
                f"val gain {diff:+.3f} does not pay for {tokens - self._tokens} more tokens"
                f" (--prompt-token-cost {self.token_cost:g}: {owed:+.3f})"
            )
        if self.kind != "any" and label is not None and self._beats and not label.beats_constant:
            return f"does not beat the constant answer {label.constant_label!r} on val"
        return None

    def _rule(self, higher: bool, diff: float, p: float) -> tuple[bool, str | None]:
        if self.kind == "any":
            return higher, None if higher else "no higher val score"
        if self.kind == "margin":
            ok = diff > 0 and diff >= self.level - 1e-12
            return ok, None if ok else f"val gain {diff:+.3f} below the margin {self.level:g}"
        ok = p < self.level
        return ok, None if ok else f"not better on val by the paired test (p={p:.3g})"

    def looked(self, prompt: str, snapshot: EvalSnapshot) -> None:
        """The search scored ``prompt`` on ``snapshot``'s rows: its val rows among them count it
        in the best-of-many correction, on those rows, unless it is measured on every val row
        (a race's drop, a trial's minibatch; every evaluation of a strategy comes here)."""
        scores = {
            s.key: s.score
            for s in snapshot.samples
            if s.score is not None and s.example_id in self._refs
        }
        if scores:
            self._looked.setdefault(prompt, {}).update(scores)

    def selection(self) -> dict[str, Any] | None:
        """The winner corrected for best-of-k (see the module docstring), or None when the
        initial prompt is still the best or nothing was measured against it."""
        if not self.best_iteration or not self._candidates:
            return None
        order = [it for it, _ in self._candidates]
        winner = order.index(self.best_iteration)
        alpha = self.level if self.kind == "significant" else ACCEPT_ALPHA
        initial = self._initial or {}
        seen = [
            paired_diffs(initial, scores)
            for prompt, scores in self._looked.items()
            if prompt not in self._judged
        ]
        full = [d for _, d in self._candidates]
        test = best_of_many(full, winner, alpha=alpha, seed=self.seed, seen=seen)
        kept = test.survived or self.kind != "significant"
        return {
            "iteration": self.best_iteration,
            **test.to_dict(),
            "kept": kept,
            "rule": self.rule,
        }


def _tokens(prompt: str) -> int:
    from reflex.models.tokens import count_tokens  # tiktoken: only when length is priced

    return count_tokens(prompt)


def _kept(check: Mapping[str, Any]) -> dict[str, Any]:
    """A label check for a record: the off-label answers cut to the most frequent ones."""
    out = dict(check)
    off = dict(check.get("off_label") or {})
    out["off_label"] = dict(list(off.items())[:OFF_LABEL_KEPT])
    misses = dict(check.get("near_misses") or {})
    out["near_misses"] = {a: label for a, label in misses.items() if a in out["off_label"]}
    return out
