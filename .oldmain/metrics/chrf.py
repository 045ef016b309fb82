"""``chrf``: sentence-level chrF (or chrF++ with ``word_order=2``) from sacrebleu, in [0, 1]."""

from __future__ import annotations

from reflex.api import Example, MetricRegistrar, Score, hookimpl

from .bleu import load_sacrebleu

__all__ = ["SacreChrf", "register_metrics"]


class SacreChrf:
    """Character n-gram F-score; script-agnostic, so it suits any language.

    ``word_order=2`` gives chrF++. Needs the ``text-metrics`` extra (sacrebleu).
    """

    name = "chrf"
    requires_reference = True

    def __init__(self, *, word_order: int = 0, lowercase: bool = False) -> None:
        self._chrf = load_sacrebleu().CHRF(word_order=word_order, lowercase=lowercase)

    @property
    def signature(self) -> str:
        return str(self._chrf.get_signature())

    def score(self, output: str, example: Example) -> Score:
        if example.ideal is None:
            return Score(0.0, error="no reference answer")
        value = max(0.0, min(1.0, self._chrf.sentence_score(output, [example.ideal]).score / 100))
        feedback = None
        if value < 0.999:
            size = len(output.strip()), len(example.ideal.strip())
            feedback = (
                f"chrF {value:.2f}: output has {size[0]} characters, expected about {size[1]}"
            )
        return Score(value, feedback=feedback)


@hookimpl
def register_metrics(register: MetricRegistrar) -> None:
    register("chrf", SacreChrf)
