"""A provider-style rate limit for the local test endpoint: R requests/s, 429 + Retry-After above.

A token bucket of ``burst`` requests refilled at ``rate`` per second (the shape real providers
enforce): a request that finds a token is admitted, any other is refused with the seconds until
the next token, which the endpoint sends as ``Retry-After``. Every arrival is logged, so a test
can count at the fake whether its clients stayed within the limit.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

__all__ = ["RateLimit"]


@dataclass
class RateLimit:
    """``rate`` requests per second with a bucket of ``burst`` (default: one second's worth)."""

    rate: float
    burst: float | None = None
    admitted: int = 0
    refused: int = 0
    arrivals: list[float] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if not self.rate > 0:
            raise ValueError(f"rate limit must be > 0 requests/s, got {self.rate}")
        self._capacity = self.burst if self.burst is not None else max(1.0, self.rate)
        self._tokens = self._capacity
        self._stamp: float | None = None
        self._lock = threading.Lock()

    def admit(self, now: float | None = None) -> float | None:
        """None when the request may go on; else the seconds to wait (Retry-After)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self.arrivals.append(now)
            if self._stamp is not None:
                elapsed = max(0.0, now - self._stamp)
                self._tokens = min(self._capacity, self._tokens + elapsed * self.rate)
            self._stamp = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                self.admitted += 1
                return None
            self.refused += 1
            return (1.0 - self._tokens) / self.rate

    def peak(self, window: float = 1.0) -> int:
        """The most arrivals seen in any ``window`` seconds (admitted and refused)."""
        with self._lock:
            times = sorted(self.arrivals)
        best, start = 0, 0
        for end, stamp in enumerate(times):
            while stamp - times[start] >= window:
                start += 1
            best = max(best, end - start + 1)
        return best
