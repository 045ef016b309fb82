"""``bleu``: sentence-level BLEU from sacrebleu (effective order), scaled to [0, 1].

sacrebleu is the optional extra ``aevyra-reflex[text-metrics]``; it is imported when the metric
is built, so the plugin loads (and ``plugins`` lists it) without it.
"""

from __future__ import annotations

from typing import Any

from reflex.api import ConfigurationError, Example, MetricRegistrar, Score, hookimpl

__all__ = ["SacreBleu", "load_sacrebleu", "register_metrics"]

INSTALL_HINT = "pip install 'aevyra-reflex[text-metrics]' (sacrebleu)"


def load_sacrebleu() -> Any:
    """The sacrebleu.metrics module, or a ConfigurationError saying how to install it."""
    try:
        from sacrebleu import metrics
    except ImportError:
        raise ConfigurationError(f"the bleu/chrf metrics need sacrebleu: {INSTALL_HINT}") from None
    return metrics


class SacreBleu:
    """Sentence BLEU with ``effective_order=True`` (required for single sentences).

    ``tokenize`` is passed to sacrebleu (``13a`` default; ``zh``/``ja-mecab``/``char`` for
    unspaced scripts). Objectives: the n-gram precisions and the brevity penalty.
    """

    name = "bleu"
    requires_reference = True

    def __init__(self, *, tokenize: str = "13a", lowercase: bool = False) -> None:
        metrics = load_sacrebleu()
        try:
            self._bleu = metrics.BLEU(effective_order=True, tokenize=tokenize, lowercase=lowercase)
        except (KeyError, ValueError, RuntimeError) as exc:
            raise ConfigurationError(f"bleu option tokenize={tokenize!r}: {exc}") from None

    @property
    def signature(self) -> str:
        """sacrebleu's reproducibility signature (available after the first score)."""
        return str(self._bleu.get_signature())

    def score(self, output: str, example: Example) -> Score:
        if example.ideal is None:
            return Score(0.0, error="no reference answer")
        result = self._bleu.sentence_score(output, [example.ideal])
        value = max(0.0, min(1.0, result.score / 100.0))
        objectives = {f"p{i + 1}": p / 100.0 for i, p in enumerate(result.precisions)}
        objectives["brevity_penalty"] = min(1.0, float(result.bp))
        feedback = None
        if value < 0.999:
            ratio = result.sys_len / result.ref_len if result.ref_len else 0.0
            length = "too short" if ratio < 0.9 else "too long" if ratio > 1.3 else "about right"
            feedback = (
                f"BLEU {value:.2f}: unigram precision {objectives['p1']:.2f}, "
                f"length {length} ({result.sys_len} vs {result.ref_len} expected tokens)"
            )
        return Score(value, feedback=feedback, objectives=objectives)


@hookimpl
def register_metrics(register: MetricRegistrar) -> None:
    register("bleu", SacreBleu)
