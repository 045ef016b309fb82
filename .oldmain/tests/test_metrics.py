"""Reference metrics: hand-checked values, options, safe feedback, registration by name."""

from __future__ import annotations

import pytest

from reflex.errors import ConfigurationError
from reflex.plugins import get_registry
from reflex.types import Example, Metric
from reflex_metrics.bleu import SacreBleu
from reflex_metrics.chrf import SacreChrf
from reflex_metrics.contains import Contains
from reflex_metrics.exact_match import ExactMatch, normalise
from reflex_metrics.f1 import TokenF1, token_f1
from reflex_metrics.length import LengthLimit
from reflex_metrics.numeric import NumericMatch, extract_number
from reflex_metrics.regex import RegexMatch
from reflex_metrics.rouge import RougeScore

SECRET = "Zanzibar"


def ex(ideal: str | None, text: str = "question") -> Example:
    return Example("e1", ({"role": "user", "content": text},), ideal=ideal)


@pytest.mark.parametrize(
    ("output", "ideal", "options", "expected"),
    [
        ("Paris", "paris", {}, 1.0),
        ('  "Paris."  ', "Paris", {}, 1.0),
        ("Paris", "paris", {"case": False}, 0.0),
        ("New   York", "new york", {}, 1.0),
        ("New   York", "new york", {"whitespace": False}, 0.0),
        ("Hello, world!", "hello world", {}, 0.0),
        ("Hello, world!", "hello world", {"punctuation": True}, 1.0),
        ("'Paris'", "Paris", {"quotes": False}, 0.0),
        ("Paris.", "Paris", {"trailing_period": False}, 0.0),
        ("Wait...", "wait...", {}, 1.0),
    ],
)
def test_exact_match_options(
    output: str, ideal: str, options: dict[str, bool], expected: float
) -> None:
    assert ExactMatch(**options).score(output, ex(ideal)).value == expected


def test_normalise_keeps_ellipsis_and_strips_quotes_after_period() -> None:
    assert normalise("Go on...") == "go on..."
    assert normalise('"yes".') == "yes"


def test_feedback_never_quotes_the_reference_by_default() -> None:
    output = "I am not sure, maybe Paris or somewhere else entirely"
    metrics: list[Metric] = [
        ExactMatch(),
        Contains(),
        TokenF1(),
        RougeScore(),
        NumericMatch(),
        SacreBleu(),
        SacreChrf(),
    ]
    for metric in metrics:
        verdict = metric.score(output, ex(f"{SECRET} 42"))
        assert verdict.value < 1.0, metric.name
        assert SECRET.lower() not in (verdict.feedback or "").lower(), metric.name


def test_feedback_can_show_the_reference_when_asked() -> None:
    verdict = ExactMatch(show_reference=True).score("Paris", ex(SECRET))
    assert verdict.feedback is not None and SECRET.lower() in verdict.feedback


def test_exact_feedback_names_the_shape_of_the_miss() -> None:
    feedback = ExactMatch().score("The answer is positive.", ex("positive")).feedback
    assert feedback is not None and "extra text" in feedback


def test_contains_and_alternatives() -> None:
    assert Contains().score("It is in New  York, USA", ex("new york")).value == 1.0
    assert Contains().score("It is in Boston", ex("new york")).value == 0.0
    assert Contains(any_of=True).score("NYC!", ex("New York|NYC")).value == 1.0


def test_regex_from_option_is_label_free_and_from_reference_otherwise() -> None:
    fixed = RegexMatch(r"\d{4}-\d{2}-\d{2}", full=True)
    assert fixed.requires_reference is False
    assert fixed.score("2024-01-31", ex(None)).value == 1.0
    assert fixed.score("on 2024-01-31", ex(None)).value == 0.0
    per_row = RegexMatch()
    assert per_row.requires_reference is True
    assert per_row.score("answer: B", ex(r"\bB\b")).value == 1.0
    assert per_row.score("x", ex("(")).error is not None
    with pytest.raises(ConfigurationError, match="invalid"):
        RegexMatch("(")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is 42.", 42.0),
        ("1,234.5 units", 1234.5),
        ("from 3 to -7", -7.0),
        ("2.5e3", 2500.0),
        ("about 12%", 12.0),
        ("none", None),
        ("\u221212", -12.0),
    ],
)
def test_extract_number(text: str, expected: float | None) -> None:
    assert extract_number(text) == expected


def test_numeric_tolerances() -> None:
    assert NumericMatch().score("so the total is 1,000", ex("1000")).value == 1.0
    assert NumericMatch().score("3.14", ex("3.1416")).value == 0.0
    assert NumericMatch(abs_tol=0.01).score("3.14", ex("3.1416")).value == 1.0
    assert NumericMatch(rel_tol=0.05).score("104", ex("100")).value == 1.0
    assert NumericMatch().score("Answer: 7, then I checked 3", ex("7")).value == 0.0
    assert NumericMatch(last=False).score("Answer: 7, then I checked 3", ex("7")).value == 1.0
    assert (
        NumericMatch().score("no idea", ex("7")).feedback == "output holds no number: got 'no idea'"
    )
    assert NumericMatch().score("5", ex("n/a")).error is not None


def test_token_f1_hand_values() -> None:
    assert token_f1("the cat sat", "a cat sat down") == pytest.approx((1.0, 2 / 3, 0.8))
    assert token_f1("", "") == (1.0, 1.0, 1.0)
    assert token_f1("dog", "cat") == (0.0, 0.0, 0.0)
    verdict = TokenF1().score("The Eiffel tower in Paris", ex("Eiffel Tower"))
    assert verdict.value == pytest.approx(2 / 3)
    assert verdict.objectives == pytest.approx({"precision": 0.5, "recall": 1.0})


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


def test_bleu_and_chrf_hand_values() -> None:
    ref = "The quick brown fox jumps over the lazy dog"
    hyp = "The quick brown dog jumps on the lazy fox"
    bleu = SacreBleu()
    assert bleu.score(hyp, ex(ref)).value == pytest.approx(0.25099, abs=1e-4)
    assert bleu.score(ref, ex(ref)).value == pytest.approx(1.0)
    assert "eff:yes" in bleu.signature
    assert SacreChrf().score(ref, ex(ref)).value == pytest.approx(1.0)
    assert 0.0 < SacreChrf().score(hyp, ex(ref)).value < 1.0


def test_length_limit() -> None:
    metric = LengthLimit(max_words=4)
    assert metric.requires_reference is False
    assert metric.score("one two three", ex(None)).value == 1.0
    verdict = metric.score("one two three four five six seven eight", ex(None))
    assert verdict.value == pytest.approx(0.5)
    assert verdict.feedback == "output is too long: 8 words (limit 4)"
    assert LengthLimit(max_chars=5, max_words=10).score("abcdefghij", ex(None)).value == 0.5
    with pytest.raises(ConfigurationError, match="max_words"):
        LengthLimit()


@pytest.mark.parametrize(
    "name", ["exact_match", "contains", "regex", "numeric", "f1", "rouge", "bleu", "chrf"]
)
def test_registered_by_name(name: str) -> None:
    metric = get_registry().metric(name)
    assert isinstance(metric, Metric) and metric.name == name
    assert metric.score("7", ex("7")).value == 1.0


def test_registered_with_options() -> None:
    assert get_registry().metric("length", max_words=3).name == "length"
    assert get_registry().metric("rouge", variant="rouge1").variant == "rouge1"  # type: ignore[attr-defined]
    judge = get_registry().metric("llm_judge", model="fake/judge")
    assert judge.name == "llm_judge" and judge.requires_reference is False
