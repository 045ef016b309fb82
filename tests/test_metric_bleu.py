"""bleu: sentence BLEU with effective order, equal to sacrebleu's corpus score of each pair."""

from __future__ import annotations

import pytest
from test_metrics import ex
from text_pairs import corpus, row

from reflex_metrics.bleu import SacreBleu

sacrebleu = pytest.importorskip("sacrebleu")


def test_bleu_hand_values() -> None:
    ref = "The quick brown fox jumps over the lazy dog"
    hyp = "The quick brown dog jumps on the lazy fox"
    bleu = SacreBleu()
    assert bleu.score(hyp, ex(ref)).value == pytest.approx(0.25099, abs=1e-4)
    assert bleu.score(ref, ex(ref)).value == pytest.approx(1.0)
    assert "eff:yes" in bleu.signature


def test_bleu_equals_sacrebleu_corpus_score_of_each_pair() -> None:
    bleu = SacreBleu()
    corpus_bleu = sacrebleu.metrics.BLEU(effective_order=True)
    for hyp, ref in corpus(150, seed=3):
        if not ref.strip():
            continue
        want_bleu = corpus_bleu.corpus_score([hyp], [[ref]]).score / 100
        assert bleu.score(hyp, row(ref)).value == pytest.approx(want_bleu, abs=1e-9)


def test_sentence_bleu_uses_effective_order() -> None:
    # Two-word outputs have no 3/4-grams: without effective order BLEU would be 0.
    assert SacreBleu().score("the cat", row("the cat")).value == pytest.approx(1.0)
    assert sacrebleu.corpus_bleu(["the cat"], [["the cat"]]).score < 100
