"""Counting tokens without a call (reflex.models.tokens): offline, the same for every model."""

from __future__ import annotations

from reflex.models.tokens import TOKENIZER, count_tokens


def test_counts_are_cl100k_base_tokens() -> None:
    assert TOKENIZER == "cl100k_base"
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2  # "hello", " world"
    assert count_tokens("Classify the sentiment.") == 5  # Class, ify, the, sentiment, .


def test_special_token_text_is_plain_text() -> None:
    # A prompt may quote "<|endoftext|>": counted, never refused as a special token.
    assert count_tokens("<|endoftext|>") > 1


def test_a_longer_prompt_counts_more() -> None:
    base = "Classify the sentiment."
    assert count_tokens(base + " Answer with one word.") > count_tokens(base)
