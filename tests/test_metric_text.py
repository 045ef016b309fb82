"""The text helpers of the reference metrics: normalisation, tokens, clipped feedback."""

from __future__ import annotations

import pytest

from reflex_metrics._text import clip, normalise, squad_tokens, strip_punctuation, unicode_tokens


def test_clip_puts_text_on_one_line_and_shortens_it() -> None:
    assert clip("one\n two\tthree") == "one two three"
    clipped = clip("word " * 40, limit=20)
    assert len(clipped) == 20 and clipped.endswith("...")
    assert clip("x" * 20, limit=20) == "x" * 20


def test_strip_punctuation_drops_unicode_punctuation_too() -> None:
    assert strip_punctuation("¡Hola, «mundo»!") == "Hola mundo"
    assert strip_punctuation("日本語。テキスト、") == "日本語テキスト"
    assert strip_punctuation("a+b=c") == "abc"  # ASCII symbols count as punctuation here


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({}, "new york"),
        ({"case": False}, "New York"),
        ({"whitespace": False}, "new  york"),
        ({"quotes": False}, '"new york."'),  # the period sits inside the quote
        ({"trailing_period": False}, "new york."),
        ({"punctuation": True}, "new york"),
    ],
)
def test_normalise_turns_one_rule_on_per_flag(flags: dict[str, bool], expected: str) -> None:
    assert normalise(' "New  York." ', **flags) == expected


def test_normalise_keeps_an_ellipsis_and_strips_quotes_inside_a_period() -> None:
    assert normalise("Wait...") == "wait..."
    assert normalise("'yes'.") == "yes"


def test_squad_tokens_drop_case_punctuation_and_articles() -> None:
    assert squad_tokens("The cat, a dog and an owl.") == ["cat", "dog", "and", "owl"]
    assert squad_tokens("theatre") == ["theatre"]  # whole words only


def test_unicode_tokens_split_unspaced_scripts_per_character() -> None:
    assert unicode_tokens("東京は big City") == ["東", "京", "は", "big", "city"]
    assert unicode_tokens("state-of-the-art 3.14") == ["state", "of", "the", "art", "3", "14"]


def test_unicode_tokens_keep_combining_marks_inside_words() -> None:
    assert unicode_tokens("मेरा नाम") == ["मेरा", "नाम"]
    assert unicode_tokens("cafe\u0301") == ["café"]  # NFC first: one word, not two
