"""Text helpers shared by the reference metrics: normalisation, tokens, safe feedback.

Feedback goes to the reasoning model that rewrites the prompt. By default it describes *how* an
output differs from the reference (lengths, counts, shapes) without quoting the reference, so
the reference answers do not leak into the prompt being optimized.
"""

from __future__ import annotations

import re
import string
import unicodedata

__all__ = ["clip", "normalise", "squad_tokens", "strip_punctuation", "unicode_tokens"]

_QUOTES = "\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb"
_ARTICLES = re.compile(r"\b(a|an|the)\b")
# Letters and digits, plus combining marks (Indic vowel signs, Arabic/Hebrew points, accents),
# which Python's \w leaves out and which would otherwise split words in two.
_WORD = re.compile(
    r"(?:[^\W_]|[\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f"
    r"\u0670\u06d6-\u06ed\u0900-\u0dff\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff])+"
)
# Scripts written without spaces: one character is one token (as in CJK ROUGE/BLEU practice).
_CHAR_SCRIPTS = re.compile(
    "[\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u309f\u30a0-\u30ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002ffff]"
)


def clip(text: str, limit: int = 80) -> str:
    """``text`` on one line, shortened to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _is_punctuation(char: str) -> bool:
    return unicodedata.category(char).startswith("P") or char in string.punctuation


class _DropPunctuation(dict[int, int | None]):
    """A ``str.translate`` table that deletes punctuation, filled lazily per code point."""

    def __missing__(self, code: int) -> int | None:
        value = None if _is_punctuation(chr(code)) else code
        self[code] = value
        return value


_DROP_PUNCTUATION = _DropPunctuation()


def strip_punctuation(text: str) -> str:
    """``text`` without punctuation characters (ASCII and Unicode ``P*`` categories)."""
    return text.translate(_DROP_PUNCTUATION)


def normalise(
    text: str,
    *,
    case: bool = True,
    whitespace: bool = True,
    punctuation: bool = False,
    quotes: bool = True,
    trailing_period: bool = True,
) -> str:
    """Normalise for comparison; each flag turns one rule on.

    ``case`` lowercases, ``whitespace`` collapses runs of whitespace, ``quotes`` strips
    surrounding quote marks, ``trailing_period`` drops one final period (not an ellipsis),
    ``punctuation`` removes every punctuation character (Unicode-aware).
    """
    value = text.strip()
    if whitespace:
        value = re.sub(r"\s+", " ", value)
    if case:
        value = value.casefold()
    if quotes:
        value = value.strip(_QUOTES).strip()
    if trailing_period and value.endswith(".") and not value.endswith(".."):
        value = value[:-1].rstrip()
        if quotes:
            value = value.strip(_QUOTES).strip()
    if punctuation:
        value = strip_punctuation(value)
        value = re.sub(r"\s+", " ", value).strip() if whitespace else value.strip()
    return value


def squad_tokens(text: str) -> list[str]:
    """SQuAD answer normalisation: lowercase, drop punctuation and articles, split on spaces."""
    value = strip_punctuation(text.lower())
    return _ARTICLES.sub(" ", value).split()


def unicode_tokens(text: str) -> list[str]:
    """Lowercased letter/digit runs; characters of unspaced scripts (CJK, Thai...) stand alone.

    On ASCII text this equals rouge-score's tokenizer (``[a-z0-9]+`` after lowercasing).
    """
    tokens: list[str] = []
    for word in _WORD.findall(unicodedata.normalize("NFC", text).lower()):
        if _CHAR_SCRIPTS.search(word) is None:
            tokens.append(word)
            continue
        buffer = ""
        for char in word:
            if _CHAR_SCRIPTS.match(char):
                if buffer:
                    tokens.append(buffer)
                    buffer = ""
                tokens.append(char)
            else:
                buffer += char
        if buffer:
            tokens.append(buffer)
    return tokens
