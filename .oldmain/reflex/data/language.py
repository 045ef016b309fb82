"""Dominant-language detection for reasoning prompts, with no dependencies.

Two steps: the dominant *script* (by Unicode block counts over letters) settles most languages
(Cyrillic, Greek, Arabic, Hebrew, Devanagari, Thai, Hangul, Japanese kana, Han). Among
Latin-script languages, the share of each language's most common function words decides.
A text too short or too ambiguous to call falls back to English with low ``confidence``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Language", "detect_language", "detect_script"]

# (first code point, last code point, script name); ranges from the Unicode block charts.
_SCRIPTS: tuple[tuple[int, int, str], ...] = (
    (0x0041, 0x024F, "latin"),
    (0x0370, 0x03FF, "greek"),
    (0x0400, 0x04FF, "cyrillic"),
    (0x0590, 0x05FF, "hebrew"),
    (0x0600, 0x06FF, "arabic"),
    (0x0900, 0x097F, "devanagari"),
    (0x0E00, 0x0E7F, "thai"),
    (0x1E00, 0x1EFF, "latin"),
    (0x3040, 0x30FF, "kana"),
    (0x4E00, 0x9FFF, "han"),
    (0xAC00, 0xD7AF, "hangul"),
)

# A script that maps to a single language (for our purposes) and its (code, name).
_SCRIPT_LANGUAGE: dict[str, tuple[str, str]] = {
    "greek": ("el", "Greek"),
    "cyrillic": ("ru", "Russian"),
    "hebrew": ("he", "Hebrew"),
    "arabic": ("ar", "Arabic"),
    "devanagari": ("hi", "Hindi"),
    "thai": ("th", "Thai"),
    "hangul": ("ko", "Korean"),
    "kana": ("ja", "Japanese"),
    "han": ("zh", "Chinese"),
}


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Frequent function words; words shared by several languages still help (each list is scored
# by its own hit share), but the distinctive ones decide.
_STOPWORDS: dict[str, tuple[str, frozenset[str]]] = {
    "en": (
        "English",
        _words("the and of to is in that it for was on with as are this be at by not you have"),
    ),
    "es": (
        "Spanish",
        _words("el la de que y en los se del las un por con no una su para es al lo como"),
    ),
    "fr": (
        "French",
        _words("le la les de des et est un une du que qui dans pour pas sur au avec ce il"),
    ),
    "de": (
        "German",
        _words("der die und das ist nicht ein eine zu den mit von sich des auf für im dem ich"),
    ),
    "it": (
        "Italian",
        _words("il di che la è per un una non sono gli del della con le da si anche ma"),
    ),
    "pt": (
        "Portuguese",
        _words("o a de que e do da em um uma para com não os no na se por mais as dos"),
    ),
    "nl": (
        "Dutch",
        _words("de het een van en is dat niet op te zijn voor met die er maar ook als bij"),
    ),
    "sv": (
        "Swedish",
        _words("och att det som en är på för med den till av inte har jag om ett var"),
    ),
    "pl": (
        "Polish",
        _words("i w nie na się to jest że do z jak co ale po tak za od przez dla"),
    ),
    "tr": (
        "Turkish",
        _words("ve bir bu da de için ile çok ne gibi daha olarak ama değil var mi en"),
    ),
}

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


@dataclass(frozen=True)
class Language:
    """A detected language: ISO 639-1 ``code``, English ``name``, ``script``, ``confidence``."""

    code: str
    name: str
    script: str
    confidence: float


ENGLISH = Language("en", "English", "latin", 0.0)


def _script_of(char: str) -> str | None:
    point = ord(char)
    for low, high, script in _SCRIPTS:
        if low <= point <= high:
            return script
    return None


def detect_script(text: str) -> tuple[str, float]:
    """The dominant script of ``text``'s letters and its share, or ``("latin", 0.0)``."""
    counts = Counter(s for s in map(_script_of, text) if s is not None)
    if not counts:
        return "latin", 0.0
    # Japanese mixes kana and Han: any notable kana share makes it Japanese.
    if counts.get("kana", 0) >= 0.1 * (counts.get("kana", 0) + counts.get("han", 0)) > 0:
        counts["kana"] += counts.pop("han", 0)
    script, count = max(sorted(counts.items()), key=lambda item: item[1])
    return script, count / sum(counts.values())


def _latin_language(text: str) -> Language:
    words = [w.lower() for w in _WORD.findall(text)]
    if not words:
        return ENGLISH
    shares = {
        code: sum(w in stop for w in words) / len(words) for code, (_, stop) in _STOPWORDS.items()
    }
    ranked = sorted(shares.items(), key=lambda item: (-item[1], item[0]))
    (code, best), (_, second) = ranked[0], ranked[1]
    if best == 0.0:
        return ENGLISH
    # Confidence: how clearly the winner beats the runner-up, damped for short texts.
    margin = (best - second) / best
    confidence = round(margin * min(1.0, len(words) / 50), 3)
    return Language(code, _STOPWORDS[code][0], "latin", confidence)


def detect_language(texts: Iterable[str]) -> Language:
    """The dominant language of ``texts`` (e.g. a dataset's inputs and references)."""
    text = "\n".join(t for t in texts if t)
    script, share = detect_script(text)
    if script == "latin":
        return _latin_language(text)
    code, name = _SCRIPT_LANGUAGE[script]
    return Language(code, name, script, round(share, 3))
