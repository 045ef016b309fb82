"""The fake endpoint's rate limit: a token bucket that says when the next call is admitted."""

from __future__ import annotations

import pytest

from reflex.testing.ratelimit import RateLimit


def test_rate_limit_is_a_token_bucket() -> None:
    limit = RateLimit(10.0)  # 10/s, a bucket of 10
    assert [limit.admit(now=0.0) for _ in range(10)] == [None] * 10
    assert limit.admit(now=0.0) == pytest.approx(0.1)  # Retry-After: the next token
    assert limit.admit(now=0.1) is None and limit.admit(now=0.1) is not None
    assert (limit.admitted, limit.refused) == (11, 2)
    assert limit.peak(1.0) == 13 and RateLimit(5.0).peak() == 0
