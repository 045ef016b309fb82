"""Which requests the local test endpoint fails, and how: the fault kinds and the plan.

Fault choice is a hash of (seed, request body, how often that body was seen), so it does not
depend on arrival order: the same requests meet the same faults in every run, and a retried
request gets a fresh draw. Faults: ``429`` (no advice), ``429-retry-after`` (Retry-After header),
``500``, ``503``, ``timeout`` (holds the connection ``hang`` seconds, then closes it),
``malformed`` (200 with broken JSON), ``empty`` (200 with empty content), ``drop`` (closes the
connection without an answer). Only when named (not in the default mix): ``trickle`` (the
headers, then the answer one byte every ``drip`` seconds), ``no-choices`` and ``null-message``
(200 with ``choices: []`` or a null message), ``huge`` (200 with an answer of ``huge_mb`` MiB,
streamed); and the permanent ``400``, ``401``, ``404``.
:mod:`reflex.testing.endpoint` serves them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["EXTRA_KINDS", "FAULT_KINDS", "PERMANENT_KINDS", "FaultPlan"]

FAULT_KINDS = ("429", "429-retry-after", "500", "503", "timeout", "malformed", "empty", "drop")
EXTRA_KINDS = ("trickle", "no-choices", "null-message", "huge")  # served only when named
# Permanent failures a test can script or choose explicitly (never drawn by default).
PERMANENT_KINDS = ("400", "401", "404")


@dataclass(frozen=True)
class FaultPlan:
    """Which requests fail, and how. ``rate`` is the chance that one attempt meets a fault.

    ``max_per_request`` caps the faults one request body meets (then it is answered), so a
    client with enough retries always gets through; ``script`` fixes the fault (or None) of the
    first requests in arrival order, for sequential tests.
    """

    rate: float = 0.0
    kinds: Sequence[str] = FAULT_KINDS
    seed: int = 0
    retry_after: float = 0.05
    hang: float = 30.0
    drip: float = 0.05
    huge_mb: float = 100.0
    max_per_request: int | None = None
    script: Sequence[str | None] = ()

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"fault rate must be in [0, 1], got {self.rate}")
        known = (*FAULT_KINDS, *EXTRA_KINDS, *PERMANENT_KINDS)
        unknown = [k for k in [*self.kinds, *self.script] if k is not None and k not in known]
        if unknown or (self.rate > 0 and not self.kinds):
            raise ValueError(f"unknown fault kinds {unknown or self.kinds}; use {known}")

    def choose(self, digest: str, attempt: int, arrival: int) -> str | None:
        """The fault for the ``attempt``-th sight (0-based) of a body, or None to answer it."""
        if arrival < len(self.script):
            return self.script[arrival]
        if self.rate <= 0 or (self.max_per_request is not None and attempt >= self.max_per_request):
            return None
        draw = hashlib.sha256(f"{self.seed}:{digest}:{attempt}".encode()).digest()
        if int.from_bytes(draw[:8], "big") / 2**64 >= self.rate:
            return None
        return self.kinds[int.from_bytes(draw[8:12], "big") % len(self.kinds)]
