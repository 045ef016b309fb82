"""rouge: hand-checked values, variants, non-Latin text, and rouge-score's own scores on ASCII."""

from __future__ import annotations

import pytest
from rouge_score import rouge_scorer
from test_metrics import ex
from text_pairs import corpus, row

from reflex.errors import ConfigurationError
from reflex_metrics.rouge import RougeScore


def test_rouge_hand_values_and_variants() -> None:
    ref = "The quick brown fox jumps over the lazy dog"
    hyp = "The quick brown dog jumps on the lazy fox"
    verdict = RougeScore().score(hyp, ex(ref))
    assert verdict.value == pytest.approx(6 / 9)
    assert verdict.objectives == pytest.approx({"rouge1": 8 / 9, "rouge2": 3 / 8, "rougeL": 6 / 9})
    assert RougeScore("rouge2").score(hyp, ex(ref)).value == pytest.approx(3 / 8)
    assert RougeScore("1").score(hyp, ex(ref)).value == pytest.approx(8 / 9)
    with pytest.raises(ConfigurationError, match="rouge3"):
        RougeScore("rouge3")


def test_rouge_scores_non_latin_text() -> None:
    assert RougeScore().score("日本語 テキスト", ex("日本語 テキスト")).value == 1.0
    assert RougeScore("rouge1").score("東京は大きい", ex("東京は小さい")).value == pytest.approx(
        4 / 6
    )
    assert RougeScore().score("मेरा नाम राम है", ex("मेरा नाम श्याम है")).value == pytest.approx(3 / 4)
    assert RougeScore().score("", ex("something")).value == 0.0


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
