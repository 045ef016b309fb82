"""chrf: chrF, equal to sacrebleu's corpus score of each pair."""

from __future__ import annotations

import pytest
from test_metrics import ex
from text_pairs import corpus, row

from reflex_metrics.chrf import SacreChrf

sacrebleu = pytest.importorskip("sacrebleu")


def test_chrf_hand_values() -> None:
    ref = "The quick brown fox jumps over the lazy dog"
    hyp = "The quick brown dog jumps on the lazy fox"
    assert SacreChrf().score(ref, ex(ref)).value == pytest.approx(1.0)
    assert 0.0 < SacreChrf().score(hyp, ex(ref)).value < 1.0


def test_chrf_equals_sacrebleu_corpus_score_of_each_pair() -> None:
    chrf = SacreChrf()
    plain_chrf = sacrebleu.metrics.CHRF()
    for hyp, ref in corpus(150, seed=3):
        if not ref.strip():
            continue
        want_chrf = sacrebleu.corpus_chrf([hyp], [[ref]]).score / 100
        assert chrf.score(hyp, row(ref)).value == pytest.approx(want_chrf, abs=1e-9)
        assert want_chrf == pytest.approx(plain_chrf.sentence_score(hyp, [ref]).score / 100)
