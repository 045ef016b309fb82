"""Token, call and cost ledgers, kept separately for task, judge and reasoning calls."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from reflex.models.litellm_call import Completion

__all__ = ["ROLES", "Ledger", "Role", "Usage", "cost_text", "known_cost", "priced"]

Role = Literal["task", "judge", "reasoning"]
ROLES: tuple[Role, ...] = ("task", "judge", "reasoning")


def priced(completion: Completion, price: tuple[float, float] | None) -> Completion:
    """``completion`` with its cost from ``price`` (USD per million input and output tokens)
    when one is given (``--price``), else as LiteLLM priced it (None when it could not)."""
    if price is None:
        return completion
    cost = (completion.prompt_tokens * price[0] + completion.completion_tokens * price[1]) / 1e6
    return replace(completion, cost=cost)


@dataclass
class Usage:
    """Totals for one role.

    ``cost`` sums the calls whose cost is known; ``cost_unknown`` counts the rest.
    ``cached_cost`` is what the cache hits' original calls cost: saved, not spent (the engine
    reserves the final test evaluation's cost from it when the baseline came from the cache).
    """

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cost_unknown: int = 0
    cached_cost: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, float | None]:
        """Every field plus ``tokens`` (counts are ints, costs floats); ``cost`` is None when
        every paid call was unpriced (unknown, not zero)."""
        data: dict[str, float | None] = {**asdict(self), "tokens": self.tokens}
        data["cost"] = known_cost(self.cost, self.calls, self.cost_unknown)
        return data


def known_cost(cost: float | None, calls: int, unknown: int) -> float | None:
    """``cost`` (the sum of the priced calls), or None when every one of ``calls`` paid calls
    was unpriced: then the cost is unknown, and 0 would be a false zero."""
    if cost is None or (unknown > 0 and unknown >= calls):
        return None
    return cost


def cost_text(cost: float | None, calls: int, unknown: int) -> str:
    """``$0.0123``; ``unpriced (37 calls)`` when no paid call had a price; ``$0.0123 +
    unpriced (5 calls)`` when some had none (``cost`` sums the priced ones)."""
    unpriced = f"unpriced ({unknown} call{'' if unknown == 1 else 's'})"
    known = known_cost(cost, calls, unknown)
    if known is None:
        return unpriced if unknown else "$0.0000"
    return f"${known:.4f}" + (f" + {unpriced}" if unknown else "")


class Ledger:
    """Thread-safe per-role usage totals. A retried call is counted once, when it succeeds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.by_role: dict[str, Usage] = {role: Usage() for role in ROLES}
        # "role:deployment" -> paid calls it served (calls through a LiteLLM Router only).
        self.deployments: dict[str, int] = {}

    def add_call(
        self, role: Role, prompt_tokens: int, completion_tokens: int, cost: float | None
    ) -> None:
        with self._lock:
            usage = self.by_role[role]
            usage.calls += 1
            usage.prompt_tokens += prompt_tokens
            usage.completion_tokens += completion_tokens
            if cost is None:
                usage.cost_unknown += 1
            else:
                usage.cost += cost

    def add_cache_hit(self, role: Role, cost: float | None = None) -> None:
        """A free answer; ``cost`` is what the original call cost (None when unknown)."""
        with self._lock:
            usage = self.by_role[role]
            usage.cache_hits += 1
            if cost is not None:
                usage.cached_cost += cost

    def add_retries(self, role: Role, count: int) -> None:
        """``count`` retries made earlier (by the segments before a resume)."""
        with self._lock:
            self.by_role[role].retries += count

    def add_deployment(self, role: Role, deployment: str) -> None:
        """Which Router deployment served a paid call of ``role``."""
        with self._lock:
            key = f"{role}:{deployment}"
            self.deployments[key] = self.deployments.get(key, 0) + 1

    def add_retry(self, role: Role) -> None:
        with self._lock:
            self.by_role[role].retries += 1

    def total(self) -> Usage:
        with self._lock:
            total = Usage()
            for usage in self.by_role.values():
                for name in (
                    "calls",
                    "cache_hits",
                    "retries",
                    "prompt_tokens",
                    "completion_tokens",
                    "cost_unknown",
                ):
                    setattr(total, name, getattr(total, name) + getattr(usage, name))
                total.cost += usage.cost
                total.cached_cost += usage.cached_cost
            return total

    def to_dict(self) -> dict[str, dict[str, float | None]]:
        out = {role: usage.to_dict() for role, usage in self.by_role.items()}
        out["total"] = self.total().to_dict()
        if self.deployments:
            served: dict[str, float | None] = {}
            with self._lock:
                served.update(self.deployments)  # counts (ints), as the roles' counts are
            out["deployments"] = served
        return out

    def restore(self, data: Mapping[str, Mapping[str, Any]]) -> None:
        """Load totals saved by :meth:`to_dict` (used when resuming a run).

        Untyped values: JSON numbers read back into the int and float fields of :class:`Usage`.
        """
        with self._lock:
            for role in ROLES:
                saved = dict(data.get(role, {}))
                saved.pop("tokens", None)
                if saved.get("cost") is None:  # every call unpriced: the priced sum is 0
                    saved["cost"] = 0.0
                self.by_role[role] = Usage(**saved)
            served = data.get("deployments", {})
            self.deployments = {str(k): int(v) for k, v in served.items()}
