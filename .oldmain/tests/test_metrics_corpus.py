"""ROUGE against rouge-score, BLEU/chrF against sacrebleu's corpus scores, on generated pairs."""

from __future__ import annotations

import random

import pytest
from rouge_score import rouge_scorer

from reflex.types import Example
from reflex_metrics.bleu import SacreBleu
from reflex_metrics.chrf import SacreChrf
from reflex_metrics.rouge import RougeScore

sacrebleu = pytest.importorskip("sacrebleu")

WORDS = [
    "the",
    "a",
    "cat",
    "dog",
    "sat",
    "on",
    "mat",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "It's",
    "state-of-the-art",
    "snake_case",
    "42",
    "3.14",
    "U.S.A.",
    "e-mail",
    "(aside)",
    '"quoted"',
    "end.",
    "Yes!",
    "no?",
    "model's",
    "GPU",
    "x2",
]


def corpus(n: int = 400, seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        ref = [rng.choice(WORDS) for _ in range(rng.randint(0, 25))]
        hyp = [w if rng.random() < 0.6 else rng.choice(WORDS) for w in ref]
        hyp = hyp[: rng.randint(0, len(hyp))] + [
            rng.choice(WORDS) for _ in range(rng.randint(0, 5))
        ]
        pairs.append((" ".join(hyp), " ".join(ref)))
    return [*pairs, ("", ""), ("", "a b"), ("a b", ""), ("Same text.", "same TEXT")]


def row(ideal: str) -> Example:
    return Example("r", ({"role": "user", "content": "q"},), ideal=ideal)


# ASCII pairs where tokenisation matters: case, punctuation, digits, repeats, empty sides.
ASCII_PAIRS = [
    ("The quick brown dog jumps on the lazy fox", "The quick brown fox jumps over the lazy dog"),
    ("It's state-of-the-art, isn't it?", "its state of the art"),
    ("the the the cat", "the cat sat on the mat"),
    ("Version 3.14 ships in 2026", "version 3 14 shipped 2026"),
    ("A B C D", "d c b a"),
    ("snake_case and e-mail", "snake case and email"),
    ("", "nothing here"),
    ("only output", ""),
]


def test_rouge_equals_rouge_score_on_ascii_text() -> None:
    """The same F-measure, exactly: on ASCII our tokenizer yields rouge-score's own tokens."""
    reference = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
    ours = RougeScore()
    for hyp, ref in [*ASCII_PAIRS, *corpus()]:
        expected = reference.score(ref, hyp)  # rouge-score takes (target, prediction)
        got = ours.scores(hyp, ref)
        for variant in ("rouge1", "rouge2", "rougeL"):
            want = expected[variant]
            assert got[variant] == (want.precision, want.recall, want.fmeasure), (variant, hyp)
        assert ours.score(hyp, row(ref)).value == expected["rougeL"].fmeasure


@pytest.mark.parametrize(
    ("hyp", "ref"),
    [
        ("日本語 テキスト", "日本語 テキスト"),
        ("猫が好きです", "犬が好きです"),
        ("Привет мир", "привет, мир!"),
        ("مرحبا بالعالم", "مرحبا بالعالم الجميل"),
    ],
)
def test_rouge_scores_text_rouge_score_drops(hyp: str, ref: str) -> None:
    reference = rouge_scorer.RougeScorer(["rougeL"])
    assert reference.score(ref, hyp)["rougeL"].fmeasure == 0.0
    assert RougeScore().score(hyp, row(ref)).value > 0.4


@pytest.mark.parametrize(
    ("hyp", "ref", "expected"),
    [
        # Greek, case folded (ΓΆΤΑ = γάτα): 4 of 5 words, 2 of 4 bigrams, LCS 4.
        ("Μία ΓΆΤΑ κοιμάται στο χαλί", "Μία γάτα κάθεται στο χαλί", (4 / 5, 2 / 4, 4 / 5)),
        # Cyrillic: 2 of 4 words, 1 of 3 bigrams.
        ("Собака спит на ковре", "Кошка сидит на ковре.", (2 / 4, 1 / 3, 2 / 4)),
        # Chinese: one token per character, punctuation dropped: 3 of 4, 2 of 3 bigrams.
        ("我喜欢狗。", "我喜欢猫", (3 / 4, 2 / 3, 3 / 4)),
        # Disjoint texts score 0 in every script.
        ("Καλημέρα κόσμε", "Αντίο φίλε", (0.0, 0.0, 0.0)),
        ("Привет мир", "Добрый день", (0.0, 0.0, 0.0)),
        ("天气很好", "我们走吧", (0.0, 0.0, 0.0)),
    ],
)
def test_rouge_on_non_latin_scripts(
    hyp: str, ref: str, expected: tuple[float, float, float]
) -> None:
    got = RougeScore().scores(hyp, ref)
    assert (got["rouge1"][2], got["rouge2"][2], got["rougeL"][2]) == pytest.approx(expected)
    assert RougeScore().score(hyp, row(ref)).value == pytest.approx(expected[2])


def test_bleu_and_chrf_equal_sacrebleu_corpus_scores_of_each_pair() -> None:
    bleu, chrf = SacreBleu(), SacreChrf()
    corpus_bleu = sacrebleu.metrics.BLEU(effective_order=True)
    plain_chrf = sacrebleu.metrics.CHRF()
    for hyp, ref in corpus(150, seed=3):
        if not ref.strip():
            continue
        want_bleu = corpus_bleu.corpus_score([hyp], [[ref]]).score / 100
        assert bleu.score(hyp, row(ref)).value == pytest.approx(want_bleu, abs=1e-9)
        want_chrf = sacrebleu.corpus_chrf([hyp], [[ref]]).score / 100
        assert chrf.score(hyp, row(ref)).value == pytest.approx(want_chrf, abs=1e-9)
        assert want_chrf == pytest.approx(plain_chrf.sentence_score(hyp, [ref]).score / 100)


def test_sentence_bleu_uses_effective_order() -> None:
    # Two-word outputs have no 3/4-grams: without effective order BLEU would be 0.
    assert SacreBleu().score("the cat", row("the cat")).value == pytest.approx(1.0)
    assert sacrebleu.corpus_bleu(["the cat"], [["the cat"]]).score < 100
