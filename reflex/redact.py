"""Credentials that ride inside URLs (``--api-base``): keep them out of everything we write.

API keys belong in the environment. A URL may still carry one (``https://user:pass@host`` or
``?api-key=...``); the run needs the real URL for its calls, but config.json, events, results,
error lines and trackers only ever see :func:`redact_url`'s form, and error texts that echo the
URL back go through :func:`scrub` first.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlencode, urlsplit, urlunsplit

__all__ = ["REDACTED", "ScrubFilter", "redact_url", "scrub", "url_secrets"]

REDACTED = "***"
# Query parameters whose values are credentials (``?api-key=``, ``?token=``, Azure ``?sig=``).
_SECRET_PARAM = re.compile(
    r"(?:^|[_\-.])(?:api[_-]?key|key|token|secret|password|passwd|auth|sig|signature|code"
    r"|credentials?)(?:$|[_\-.])",
    re.I,
)
_MIN_LEN = 3  # shorter values ("1", "ab") would redact ordinary text


def redact_url(url: str | None) -> str | None:
    """``url`` with any ``user:password@`` and secret-named query values replaced by ``***``.

    Deterministic, so two redacted forms of the same URL compare equal (``--resume`` does).
    """
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL we can parse: keep nothing that might be a secret
        return REDACTED
    _, at, host = parts.netloc.rpartition("@")
    netloc = f"{REDACTED}@{host}" if at else parts.netloc
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = (
        urlencode([(k, REDACTED if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="*")
        if pairs
        else parts.query
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_secrets(url: str | None) -> list[str]:
    """The credential strings inside ``url`` (user, password, secret query values), raw and
    as they appear percent-encoded, longest first."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    userinfo, at, _ = parts.netloc.rpartition("@")
    found = [p for p in userinfo.split(":") if p] if at else []
    found += [
        v for k, v in parse_qsl(parts.query, keep_blank_values=True) if _SECRET_PARAM.search(k)
    ]
    variants = {f for v in found for f in (v, unquote(v), quote(v, safe=""), quote_plus(v))}
    return sorted((v for v in variants if len(v) >= _MIN_LEN), key=len, reverse=True)


def scrub(text: str, *urls: str | None) -> str:
    """``text`` with every credential of ``urls`` replaced by ``***`` (for error messages)."""
    for secret in sorted({s for url in urls for s in url_secrets(url)}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


class ScrubFilter(logging.Filter):
    """A logging filter that replaces the credentials of ``urls`` in every record by ``***``."""

    def __init__(self, *urls: str | None) -> None:
        super().__init__()
        self.urls = urls

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = scrub(message, *self.urls)
        if clean != message:
            record.msg, record.args = clean, ()
        return True
