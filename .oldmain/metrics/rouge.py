"""``rouge``: ROUGE-1/2/L F-measure from rouge-score, with a tokenizer for any script.

rouge-score (Google Research's reference implementation) does the n-gram and LCS arithmetic.
Its default tokenizer keeps only ``[a-z0-9]`` after lowercasing, so text in any other script
becomes an empty token list and scores 0 (a Greek, Russian or Japanese pair). The metric hands
it :class:`UnicodeTokenizer` instead:

- words of any script: lowercased runs of letters, digits and combining marks (NFC first);
- scripts written without spaces (Chinese, Japanese kana, Thai, Lao, Myanmar, Khmer): one
  token per character, the usual practice for CJK ROUGE when no word segmenter is at hand
  (a segmenter would be a language-specific dependency). Hangul syllables are single tokens
  too: Korean words carry attached particles, so whole-word matching would under-count.

On ASCII text these are exactly rouge-score's tokens, so the scores are identical (tests pin
this). No stemming (rouge-score's ``use_stemmer`` is English-only).

rouge-score is a core dependency, imported when the metric is built: it imports nltk and
numpy (1-2 s), which ``aevyra-reflex --help`` and ``plugins`` must not pay.
"""

from __future__ import annotations

from typing import Any

from reflex.api import ConfigurationError, Example, MetricRegistrar, Score, hookimpl

from ._text import unicode_tokens

__all__ = ["RougeScore", "UnicodeTokenizer", "load_rouge_scorer", "register_metrics"]

VARIANTS = ("rouge1", "rouge2", "rougeL")
_ALIASES = {
    "1": "rouge1",
    "2": "rouge2",
    "l": "rougeL",
    "rouge1": "rouge1",
    "rouge2": "rouge2",
    "rougel": "rougeL",
}
INSTALL_HINT = "pip install 'rouge-score==0.1.2' (a dependency of aevyra-reflex)"


class UnicodeTokenizer:
    """rouge-score's tokenizer interface (``tokenize(text) -> list[str]``) for any script."""

    def tokenize(self, text: str) -> list[str]:
        return unicode_tokens(text)


def load_rouge_scorer() -> Any:
    """The ``rouge_score.rouge_scorer`` module, or a ConfigurationError saying how to install it."""
    try:
        from rouge_score import rouge_scorer
    except ImportError:
        raise ConfigurationError(f"the rouge metric needs rouge-score: {INSTALL_HINT}") from None
    return rouge_scorer


class RougeScore:
    """ROUGE F-measure; ``variant`` is ``rougeL`` (default), ``rouge1`` or ``rouge2``.

    The score is the chosen variant; every variant is reported as an objective. Feedback gives
    the recall/precision balance (too short / too long), never the reference text.
    """

    name = "rouge"
    requires_reference = True

    def __init__(self, variant: str = "rougeL") -> None:
        key = _ALIASES.get(variant.lower().replace("-", "").replace("_", ""))
        if key is None:
            raise ConfigurationError(
                f"rouge variant {variant!r} is unknown; use one of {', '.join(VARIANTS)}"
            )
        self.variant = key
        # Every variant in one pass over the same tokens: all three are objectives.
        self._scorer = load_rouge_scorer().RougeScorer(list(VARIANTS), tokenizer=UnicodeTokenizer())

    def scores(self, output: str, reference: str) -> dict[str, tuple[float, float, float]]:
        """(precision, recall, F) for every variant."""
        found = self._scorer.score(reference, output)  # rouge-score takes (target, prediction)
        return {
            name: (float(s.precision), float(s.recall), float(s.fmeasure))
            for name, s in found.items()
        }

    def score(self, output: str, example: Example) -> Score:
        if example.ideal is None:
            return Score(0.0, error="no reference answer")
        found = self.scores(output, example.ideal)
        precision, recall, value = found[self.variant]
        objectives = {name: triple[2] for name, triple in found.items()}
        return Score(
            min(1.0, value), feedback=_feedback(precision, recall, value), objectives=objectives
        )


def _feedback(precision: float, recall: float, value: float) -> str | None:
    if value >= 0.999:
        return None
    if recall < precision - 0.15:
        shape = "misses much of the expected content (low recall): cover more of it"
    elif precision < recall - 0.15:
        shape = "adds content that is not expected (low precision): be more concise"
    else:
        shape = "differs in wording and content from what is expected"
    return f"ROUGE {value:.2f} (precision {precision:.2f}, recall {recall:.2f}): output {shape}"


@hookimpl
def register_metrics(register: MetricRegistrar) -> None:
    register("rouge", RougeScore)
