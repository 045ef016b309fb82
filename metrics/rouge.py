"""``rouge``: ROUGE-1/2/L F-measure, own implementation (no rouge-score dependency).

Agrees with ``rouge-score`` (``use_stemmer=False``) on ASCII text: same tokens (lowercased
``[a-z0-9]+`` runs), clipped n-gram overlap, LCS for ROUGE-L, F = 2PR/(P+R). Unlike rouge-score,
which drops every non-ASCII character (a Japanese pair scores 0), letters of any script count,
and characters of unspaced scripts (Chinese, Japanese, Thai...) are single tokens.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from reflex.api import ConfigurationError, Example, MetricRegistrar, Score, hookimpl

from ._text import unicode_tokens

__all__ = ["RougeScore", "lcs_length", "register_metrics", "rouge_l", "rouge_n"]

VARIANTS = ("rouge1", "rouge2", "rougeL")
_ALIASES = {
    "1": "rouge1",
    "2": "rouge2",
    "l": "rougeL",
    "rouge1": "rouge1",
    "rouge2": "rouge2",
    "rougel": "rougeL",
}


def _f(overlap: int, hyp_total: int, ref_total: int) -> tuple[float, float, float]:
    precision = overlap / hyp_total if hyp_total else 0.0
    recall = overlap / ref_total if ref_total else 0.0
    if precision + recall == 0:
        return precision, recall, 0.0
    return precision, recall, 2 * precision * recall / (precision + recall)


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def rouge_n(hyp: Sequence[str], ref: Sequence[str], n: int) -> tuple[float, float, float]:
    """(precision, recall, F) of clipped n-gram overlap."""
    hyp_grams, ref_grams = _ngrams(hyp, n), _ngrams(ref, n)
    overlap = sum((hyp_grams & ref_grams).values())
    return _f(overlap, sum(hyp_grams.values()), sum(ref_grams.values()))


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence (two-row dynamic programme)."""
    if len(a) < len(b):
        a, b = b, a
    previous = [0] * (len(b) + 1)
    for token in a:
        current = [0]
        left = 0
        for j, other in enumerate(b):
            # The hot loop of ROUGE-L: plain comparisons beat max() here.
            if token == other:
                left = previous[j] + 1
            elif previous[j + 1] > left:
                left = previous[j + 1]
            current.append(left)
        previous = current
    return previous[-1]


def rouge_l(hyp: Sequence[str], ref: Sequence[str]) -> tuple[float, float, float]:
    """(precision, recall, F) from the longest common subsequence."""
    return _f(lcs_length(hyp, ref), len(hyp), len(ref))


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

    def scores(self, output: str, reference: str) -> dict[str, tuple[float, float, float]]:
        """(precision, recall, F) for every variant."""
        hyp, ref = unicode_tokens(output), unicode_tokens(reference)
        return {
            "rouge1": rouge_n(hyp, ref, 1),
            "rouge2": rouge_n(hyp, ref, 2),
            "rougeL": rouge_l(hyp, ref),
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
