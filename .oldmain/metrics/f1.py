"""``f1``: SQuAD-style token F1 between the output and the reference."""

from __future__ import annotations

from collections import Counter

from reflex.api import Example, MetricRegistrar, Score, hookimpl

from ._text import squad_tokens

__all__ = ["TokenF1", "register_metrics", "token_f1"]


def token_f1(prediction: str, reference: str) -> tuple[float, float, float]:
    """(precision, recall, f1) over SQuAD-normalised tokens; two empty answers score 1."""
    pred, ref = squad_tokens(prediction), squad_tokens(reference)
    if not pred or not ref:
        same = float(pred == ref)
        return same, same, same
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0, 0.0, 0.0
    precision, recall = common / len(pred), common / len(ref)
    return precision, recall, 2 * precision * recall / (precision + recall)


class TokenF1:
    """Token overlap F1 (lowercased, punctuation and articles removed), as in SQuAD.

    Objectives: ``precision`` and ``recall``. Feedback reports counts of missing and extra tokens,
    and names the extra output tokens (they come from the output, not the reference).
    """

    name = "f1"
    requires_reference = True

    def __init__(self, *, show_reference: bool = False) -> None:
        self.show_reference = show_reference

    def score(self, output: str, example: Example) -> Score:
        if example.ideal is None:
            return Score(0.0, error="no reference answer")
        precision, recall, f1 = token_f1(output, example.ideal)
        objectives = {"precision": precision, "recall": recall}
        if f1 == 1.0:
            return Score(1.0, objectives=objectives)
        pred, ref = Counter(squad_tokens(output)), Counter(squad_tokens(example.ideal))
        missing, extra = ref - pred, pred - ref
        parts = [f"token F1 {f1:.2f}"]
        if missing:
            parts.append(f"{sum(missing.values())} expected token(s) missing")
        if extra:
            shown = ", ".join(list(extra)[:8])
            parts.append(f"{sum(extra.values())} extra token(s) in the output ({shown})")
        if self.show_reference:
            parts.append(f"missing: {', '.join(list(missing)[:8])}")
        return Score(f1, feedback="; ".join(parts), objectives=objectives)


@hookimpl
def register_metrics(register: MetricRegistrar) -> None:
    register("f1", TokenF1)
