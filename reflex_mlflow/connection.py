"""How the MLflow adapter talks to a tracking server: fail fast, and never for long.

MLflow's own defaults retry a request for minutes (7 retries, exponential back-off, 120 s
timeout): a server that died mid-run would stall every hook. ``check_reachable`` refuses a
server that does not accept connections before the run; ``bounded_requests`` caps each request
the callback makes (no retry, 3 s; and no "View run at <URI>" line, which would print a
password in the URI), unless the user set those variables: a dead server costs
milliseconds per call, a hanging one 3 s, and the breaker opens after two such calls.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from reflex.api.tracking import redact_url

__all__ = ["REQUEST_LIMITS", "bounded_requests", "check_reachable", "shown", "where_lines"]

CONNECT_TIMEOUT_S = 3.0
REQUEST_LIMITS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "0",
    "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "3",
    # MLflow prints "View run ... at: <tracking URI>" itself when a run ends, credentials and
    # all (and W&B records the console); the CLI prints the redacted location instead.
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
}


@contextmanager
def bounded_requests() -> Iterator[None]:
    """MLflow reads these at each request: set them around the callback's own calls only."""
    added = {k: v for k, v in REQUEST_LIMITS.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


def shown(uri: str) -> str:
    """A tracking URI to print or save, without credentials (a database URI's password too;
    redaction keeps every other character, so ``sqlite:////abs/path`` stays as it is)."""
    return redact_url(uri) or ""


def check_reachable(uri: str) -> None:
    """Fail fast on a tracking server that is down (MLflow itself retries for minutes)."""
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return
    if any(
        os.environ.get(name) for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
    ):
        return  # the proxy, not us, decides what is reachable
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ConnectionError(
            f"MLflow tracking server {redact_url(uri)} is unreachable ({exc}); start it "
            "(mlflow server) or point --mlflow-tracking-uri / MLFLOW_TRACKING_URI elsewhere"
        ) from None


def where_lines(uri: str, experiment: str, experiment_id: str, run_id: str) -> list[str]:
    """Where the run went, and the command that opens it (``uri`` as :func:`shown` gives it)."""
    page = f"#/experiments/{experiment_id}/runs/{run_id}"
    lines = [
        f"MLflow: run {run_id} in experiment {experiment!r} (id {experiment_id}), "
        f"tracking URI {uri}"
    ]
    if uri.startswith(("http://", "https://")):
        lines.append(f"  open {uri.rstrip('/')}/{page}")
    else:
        lines.append(f"  open: mlflow ui --backend-store-uri {uri}")
        lines.append(f"  then http://127.0.0.1:5000/{page}")
    return lines
