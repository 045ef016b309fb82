"""``--api-base`` URLs that carry credentials, with the redacted form trackers must log.

Shared by the tracker tests (MLflow params/tags, W&B config) and the CLI log test; each case is
``(url, redacted, canaries)``: no canary may appear anywhere a run writes or logs.
"""

from __future__ import annotations

__all__ = ["URL_CASES", "with_host"]

URL_CASES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # Azure-style SAS query: `sig` and `code` are credentials too (the narrow tracker pattern
    # used to log them verbatim).
    "sig": (
        "https://host/v1?sig=S3CRET&code=ABC",
        "https://host/v1?sig=***&code=***",
        ("S3CRET", "code=ABC"),
    ),
    "userinfo": ("http://user:PASSWD@host/v1", "http://***@host/v1", ("PASSWD",)),
    "api-key": (
        "https://host/v1?api-key=K3Y-CANARY-42",
        "https://host/v1?api-key=***",
        ("K3Y-CANARY-42",),
    ),
}


def with_host(url: str, base: str) -> str:
    """``url`` with ``https://host/v1`` / ``http://...@host/v1`` pointed at ``base`` instead."""
    scheme_and_host, _, rest = base.partition("/v1")
    host = scheme_and_host.split("://", 1)[1]
    return url.replace("https://host/v1", base).replace("@host/v1", f"@{host}/v1{rest}")
