"""Which provider failures are worth retrying, and how long to wait between attempts.

LiteLLM maps most failures onto OpenAI-style classes, but a refused connection and a missing API
key both arrive as ``InternalServerError``: we classify by class *and* message.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from dataclasses import dataclass
from datetime import timezone

from reflex.config import default
from reflex.redact import scrub

__all__ = [
    "RetryPolicy",
    "error_name",
    "first_line",
    "is_rate_limit",
    "is_transient",
    "permanent_message",
    "retry_after_seconds",
]

_PERMANENT_CLASSES = {
    "AuthenticationError",
    "PermissionDeniedError",
    "BadRequestError",
    "NotFoundError",
    "ContextWindowExceededError",
    "ContentPolicyViolationError",
    "UnprocessableEntityError",
    "UnsupportedParamsError",
    "InvalidRequestError",
    "BudgetExceededError",
    "ResponseTooLarge",  # over --max-response-mb: the provider would send it again
}
_TRANSIENT_CLASSES = {
    "RateLimitError",
    "Timeout",
    "APITimeoutError",
    "APIConnectionError",
    "InternalServerError",
    "ServiceUnavailableError",
    "BadGatewayError",
    "TimeoutError",
    "ConnectionError",
    "ConnectionResetError",
    "ConnectionRefusedError",
    "RemoteProtocolError",
    "ReadTimeout",
    "ConnectTimeout",
    "ReadError",
    "MalformedAnswer",
}
_PERMANENT_HINTS = (
    "missing credentials",
    "credentials encoded in url",  # user:password@ in --api-base: keys belong in the env
    "api key",
    "api_key",
    "authentication",
    "unauthorized",
    "invalid_api_key",
    "context window",
    "context length",
    "maximum context",
    "permission denied",
)
_TRANSIENT_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}
# A rate limit or timeout is transient whatever its message says ("... per API key" is common),
# except an exhausted quota or billing limit, which no amount of waiting fixes.
_ALWAYS_TRANSIENT_CLASSES = {"RateLimitError", "Timeout", "APITimeoutError", "CallDeadlineExceeded"}
_QUOTA_HINTS = ("insufficient_quota", "exceeded your current quota", "billing")


def _status_code(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def _class_names(exc: BaseException) -> list[str]:
    """The error's class and bases by name (a client process's error carries the original's)."""
    remote = getattr(exc, "remote_classes", None)
    return list(remote) if remote else [cls.__name__ for cls in type(exc).__mro__]


def error_name(exc: BaseException) -> str:
    """The error's class name (for a client process's error, the original class's)."""
    return _class_names(exc)[0]


def is_rate_limit(exc: BaseException) -> bool:
    """A 429 / RateLimitError: the provider asks the whole run, not one call, to slow down."""
    names = set(_class_names(exc))
    return _status_code(exc) == 429 or "RateLimitError" in names


def is_transient(exc: BaseException) -> bool:
    """True for rate limits, 5xx, timeouts and dropped connections; False for everything else."""
    message = str(exc).lower()
    names = set(_class_names(exc))
    if names & _ALWAYS_TRANSIENT_CLASSES:
        return not any(hint in message for hint in _QUOTA_HINTS)
    if any(hint in message for hint in _PERMANENT_HINTS):
        return False
    if names & _PERMANENT_CLASSES:
        return False
    code = _status_code(exc)
    if code is not None and code in _TRANSIENT_STATUS:
        return True
    if code is not None and 400 <= code < 500:
        return False
    return bool(names & _TRANSIENT_CLASSES)


def _header(headers: object, name: str) -> object:
    """``headers[name]`` from a dict or ``httpx.Headers`` (any object with ``get``), else None."""
    if not hasattr(headers, "get"):
        return None
    try:
        return headers.get(name) or headers.get(name.title())
    except AttributeError:
        return None


def retry_after_seconds(exc: BaseException) -> float | None:
    """The delay a provider asked for in a Retry-After header (seconds or HTTP-date), if any.

    An unparseable value means "no advice", never an error: it must not turn a retryable
    failure into a crash.
    """
    sources = (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    )
    for headers in sources:
        if headers:
            value = _header(headers, "retry-after")
            if isinstance(value, (str, bytes, int, float)):
                return _parse_retry_after(value)
            if value is not None:  # not a header value: no advice
                return None
    return None


def _parse_retry_after(value: str | bytes | float) -> float | None:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        try:
            parsed = email.utils.parsedate_to_datetime(str(value))
        except (TypeError, ValueError, IndexError):
            return None
        if parsed.tzinfo is None:  # "-0000" parses naive; HTTP dates are always UTC
            parsed = parsed.replace(tzinfo=timezone.utc)
        return max(0.0, parsed.timestamp() - time.time())
    return max(0.0, seconds) if math.isfinite(seconds) else None


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, capped; Retry-After wins when the provider sends it.

    A call gives up after ``max_retries`` retries only when the provider made no progress (no
    answer to any call of the run) for ``progress_window`` seconds; while other calls are being
    answered it keeps trying, up to ``max_retries_with_progress`` retries (a request the provider
    never answers must still end). At 60% injected faults a fixed 6 retries failed ~2.8% of calls,
    and one such call stopped the run.
    """

    max_retries: int = 6
    base_delay: float = 0.5
    max_delay: float = 60.0
    progress_window: float = default("retry_window")
    max_retries_with_progress: int = 30

    def gives_up(self, attempt: int, since_progress: float | None) -> bool:
        """Whether a call that failed ``attempt`` times stops, ``since_progress`` seconds after
        the provider's last answer to the run (None: no answer yet)."""
        if attempt <= self.max_retries:
            return False
        if attempt > self.max_retries_with_progress:
            return True
        return since_progress is None or since_progress >= self.progress_window

    def delay(self, attempt: int, exc: BaseException, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        asked = retry_after_seconds(exc)
        if asked is not None:
            return min(asked, self.max_delay)
        ceiling = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        return rng.uniform(ceiling / 2, ceiling)


def first_line(exc: BaseException, api_base: str | None = None) -> str:
    """``Class: first line`` of an error, with URL credentials scrubbed."""
    # Providers echo the request URL back; credentials inside --api-base must not follow it.
    text = scrub(str(exc), api_base).strip().splitlines()
    line = text[0] if text else ""
    marker = line.find("Traceback (most recent call last)")
    if marker >= 0:  # LiteLLM glued a traceback on: keep what precedes it and its last line
        last = next((t.strip() for t in reversed(text[1:]) if t.strip()), "")
        line = " ".join(part for part in (line[:marker].strip(" :-"), last) if part)
    return f"{_class_names(exc)[0]}: {line}"


def permanent_message(model: str, exc: BaseException, api_base: str | None = None) -> str:
    """The one-line message for a failure that is not retried, with the fix."""
    text = first_line(exc, api_base)
    lowered = text.lower()
    if error_name(exc) == "ResponseTooLarge":
        hint = "raise --max-response-mb if such answers are expected, or check --api-base"
    elif "api key" in lowered or "credentials" in lowered or "authentication" in lowered:
        hint = "set the provider's API key in the environment (e.g. OPENAI_API_KEY)"
    elif "quota" in lowered or "billing" in lowered:
        hint = "check the provider account's quota and billing"
    elif "context" in lowered:
        hint = "shorten the prompt or inputs, or use a model with a longer context window"
    else:
        hint = "check the model name, --api-base and the request parameters"
    return f"{model}: permanent provider error, not retried: {text}; {hint}"
