"""Tests for reflex.models.retry: which LiteLLM failures are retried, Retry-After, backoff."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest

from reflex.models import retry
from reflex.models.client import load_litellm
from reflex.models.retry import RetryPolicy, is_transient, retry_after_seconds


@pytest.fixture(scope="module")
def litellm() -> Any:
    return load_litellm()


def make(litellm: Any, name: str, message: str = "boom", **kwargs: Any) -> BaseException:
    """Build a real litellm exception the way LiteLLM itself constructs it."""
    cls = getattr(litellm, name)
    return cls(message=message, llm_provider="openai", model="gpt-x", **kwargs)


@pytest.mark.parametrize(
    ("name", "message", "transient"),
    [
        ("RateLimitError", "Rate limit reached for requests", True),
        ("InternalServerError", "upstream exploded", True),
        ("InternalServerError", "OpenAIException - Connection error.", True),
        ("InternalServerError", "OpenAIException - Missing credentials. Pass an api_key", False),
        ("ServiceUnavailableError", "overloaded", True),
        ("Timeout", "Request timed out", True),
        ("APIConnectionError", "connection refused", True),
        ("AuthenticationError", "Incorrect API key provided", False),
        ("BadRequestError", "temperature must be <= 2", False),
        ("ContextWindowExceededError", "maximum context length is 8192 tokens", False),
        ("NotFoundError", "The model gpt-9 does not exist", False),
        # A rate limit is a rate limit even when the provider mentions the key it counted against.
        ("RateLimitError", "Rate limit exceeded for this API key", True),
        # ...but an exhausted quota is not fixed by waiting.
        ("RateLimitError", "You exceeded your current quota (insufficient_quota)", False),
    ],
)
def test_litellm_exception_classification(
    litellm: Any, name: str, message: str, transient: bool
) -> None:
    assert is_transient(make(litellm, name, message)) is transient


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (ConnectionResetError("peer reset"), True),
        (ConnectionRefusedError("refused"), True),
        (TimeoutError("read timed out"), True),
        (asyncio.TimeoutError(), True),
        (ValueError("bad value"), False),
        (KeyError("choices"), False),
        (RuntimeError("boom"), False),
    ],
)
def test_plain_python_exception_classification(exc: BaseException, transient: bool) -> None:
    assert is_transient(exc) is transient


@pytest.mark.parametrize(
    ("status", "transient"),
    [(429, True), (500, True), (502, True), (503, True), (400, False), (422, False)],
)
def test_generic_api_error_classified_by_status(litellm: Any, status: int, transient: bool) -> None:
    exc = litellm.APIError(status_code=status, message="x", llm_provider="openai", model="m")
    assert is_transient(exc) is transient


def test_permission_denied_is_permanent(litellm: Any) -> None:
    response = httpx.Response(403, request=httpx.Request("POST", "https://example.invalid"))
    exc = make(litellm, "PermissionDeniedError", "no access", response=response)
    assert is_transient(exc) is False


# --- Retry-After ---------------------------------------------------------------------------


class _WithHeaders(Exception):
    def __init__(self, headers: Any) -> None:
        super().__init__("limited")
        self.litellm_response_headers = headers


class _WithResponse(Exception):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__("limited")
        self.response = response


# An HTTP date is read against the wall clock; the tests stop that clock (reflex.models.retry
# reads ``time.time()``) so the delay is exact, however long the machine takes between the two.
NOW = 1_800_000_000.0  # a whole second: HTTP dates have a one-second resolution


class _StoppedClock:
    @staticmethod
    def time() -> float:
        return NOW


@pytest.fixture
def stopped_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "time", _StoppedClock)


def _http_date(delta: timedelta) -> str:
    when = datetime.fromtimestamp(NOW, timezone.utc) + delta
    return email.utils.format_datetime(when, usegmt=True)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"Retry-After": "2.5"}, 2.5),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after": ""}, None),
        ({"retry-after": "inf"}, None),
        ({"x-other": "1"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_retry_after_seconds_from_litellm_headers(headers: Any, expected: float | None) -> None:
    assert retry_after_seconds(_WithHeaders(headers)) == expected


def test_retry_after_http_date_in_future_and_past(stopped_clock: None) -> None:
    ahead = retry_after_seconds(_WithHeaders({"retry-after": _http_date(timedelta(seconds=30))}))
    assert ahead == 30.0
    past = retry_after_seconds(_WithHeaders({"retry-after": _http_date(timedelta(minutes=-5))}))
    assert past == 0.0


def test_retry_after_http_date_without_zone_is_utc(stopped_clock: None) -> None:
    # "-0000" parses to a naive datetime; reading it as local time would skew the delay by hours.
    when = datetime.fromtimestamp(NOW, timezone.utc) + timedelta(seconds=60)
    value = when.strftime("%a, %d %b %Y %H:%M:%S -0000")
    assert retry_after_seconds(_WithHeaders({"retry-after": value})) == 60.0


def test_retry_after_from_httpx_response_headers(stopped_clock: None) -> None:
    response = httpx.Response(429, headers={"Retry-After": "4"})
    assert retry_after_seconds(_WithResponse(response)) == 4.0
    dated = httpx.Response(429, headers={"retry-after": _http_date(timedelta(seconds=10))})
    assert retry_after_seconds(_WithResponse(dated)) == 10.0


def test_retry_after_on_real_rate_limit_error(litellm: Any) -> None:
    exc = make(
        litellm,
        "RateLimitError",
        "slow down",
        response=httpx.Response(429, headers={"retry-after": "3"}),
    )
    assert retry_after_seconds(exc) == 3.0
    assert retry_after_seconds(make(litellm, "RateLimitError")) is None


def test_retry_after_falls_back_to_response_when_litellm_headers_lack_it() -> None:
    exc = _WithResponse(httpx.Response(429, headers={"retry-after": "5"}))
    exc.litellm_response_headers = {"x-request-id": "abc"}  # type: ignore[attr-defined]
    assert retry_after_seconds(exc) == 5.0


def test_retry_after_on_exception_without_headers() -> None:
    assert retry_after_seconds(ValueError("x")) is None


# --- RetryPolicy.delay ---------------------------------------------------------------------


def test_delay_honours_retry_after_capped_by_max_delay() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=10.0)
    rng = random.Random(0)
    assert policy.delay(1, _WithHeaders({"retry-after": "3"}), rng) == 3.0
    assert policy.delay(5, _WithHeaders({"retry-after": "3"}), rng) == 3.0
    assert policy.delay(1, _WithHeaders({"retry-after": "500"}), rng) == 10.0
    assert policy.delay(1, _WithHeaders({"retry-after": "0"}), rng) == 0.0


def test_delay_exponential_with_jitter_within_bounds() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=4.0)
    rng = random.Random(1)
    for attempt in range(1, 9):
        ceiling = min(4.0, 0.5 * 2 ** (attempt - 1))
        delays = [policy.delay(attempt, RuntimeError("x"), rng) for _ in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays), (attempt, delays)
        assert len(set(delays)) > 1  # jittered, not a fixed schedule


def test_delay_is_deterministic_for_a_seeded_rng_and_zero_base_is_zero() -> None:
    policy = RetryPolicy(base_delay=1.0)
    first = [policy.delay(a, RuntimeError(), random.Random(7)) for a in (1, 2, 3)]
    again = [policy.delay(a, RuntimeError(), random.Random(7)) for a in (1, 2, 3)]
    assert first == again
    fast = RetryPolicy(base_delay=0.0)
    assert fast.delay(3, RuntimeError(), random.Random(0)) == 0.0


def test_garbage_retry_after_falls_back_to_backoff() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0)
    delay = policy.delay(2, _WithHeaders({"retry-after": "not-a-date"}), random.Random(0))
    assert 1.0 <= delay <= 2.0


def test_policy_defaults_are_sane_and_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = RetryPolicy()
    assert policy.max_retries >= 1 and 0 < policy.base_delay <= policy.max_delay
    with pytest.raises(AttributeError):
        policy.max_retries = 1  # type: ignore[misc]

    def no_sleep(seconds: float) -> None:
        raise AssertionError(f"delay() slept {seconds} s: it must only compute the delay")

    monkeypatch.setattr(time, "sleep", no_sleep)
    monkeypatch.setattr(asyncio, "sleep", no_sleep)
    assert policy.delay(1, RuntimeError(), random.Random(0)) > 0
