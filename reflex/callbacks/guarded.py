"""A tracker callback that never stops a run: :class:`GuardedCallback`.

A tracker adapter (``reflex_mlflow``, ``reflex_wandb``, a tracker of your own) builds on it: each
hook's work runs guarded, a failure is one warning (scrubbed of the run's URL credentials), a
tracker that is down before its run exists switches itself off, and a circuit breaker takes a
tracker that goes away mid-run offline; the run directory keeps everything for ``sync``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, ClassVar

from reflex.callbacks import Callback
from reflex.redact import scrub

if TYPE_CHECKING:
    from reflex.config import RunConfig

__all__ = ["GuardedCallback", "run_urls"]

logger = logging.getLogger(__name__)


def run_urls(config: RunConfig) -> tuple[str | None, ...]:
    """The run's URLs whose credentials no tracker may see (scrubbed from every text)."""
    return (config.api_base, config.reasoning_base_url, config.cache_url)


_OUTAGE_MARKERS = (
    "Max retries exceeded",
    "Connection refused",
    "Connection reset",
    "Connection aborted",
    "Failed to establish a new connection",
    "timed out",
    "RemoteDisconnected",
)


class GuardedCallback(Callback):
    """Base for tracker callbacks: a failing tracker call is a warning, never an exception.

    ``on_run_start`` remembers the run's URLs (and the tracker's own, :meth:`_tracker_urls`),
    whose credentials :meth:`_scrub` hides from every text the tracker sends, then runs
    :meth:`_start`. Subclasses wrap each hook's work in :meth:`_safely`, which runs it inside
    :meth:`_request_limits` (bounded timeouts and retries for the tracker's requests). If the
    failure happens before the tracker run exists (``_has_run()`` is false), the callback
    switches itself off, so a tracker that is down costs one warning, not one per iteration.
    A circuit breaker does the same once the run exists: after ``breaker`` calls in a row
    failed because the tracker is unreachable (e.g. the server died mid-run), the callback
    goes offline for the rest of the run and :meth:`_went_offline` records it; the run
    directory keeps everything, and
    ``aevyra-reflex sync`` replays it into the tracker later.
    """

    tracker: ClassVar[str] = "tracker"
    # The tracker's entry in the run's .trackers.json (``"mlflow"``), if it keeps one.
    state_key: ClassVar[str | None] = None
    breaker: ClassVar[int] = 2

    _off: bool = False
    _failures: int = 0
    _failed: tuple[str, ...] = ()  # one line per failed hook call, scrubbed
    _urls: tuple[str | None, ...] = ()

    def missed(self) -> list[str]:
        """What did not reach the tracker: one line per hook call that failed (``on_run_start:
        ConnectionError: ...``), plus one when logging switched off; empty when every call
        landed. ``aevyra-reflex sync`` fails on a non-empty list."""
        lines = list(self._failed)
        if self._off:
            lines.append("logging was switched off: the rest of the run was not sent")
        return lines

    def on_run_start(self, config: RunConfig, initial_prompt: str) -> None:
        self._urls = (*self._tracker_urls(), *run_urls(config))
        self._safely("on_run_start", lambda: self._start(config, initial_prompt))

    def _start(self, config: RunConfig, initial_prompt: str) -> None:
        raise NotImplementedError

    def _has_run(self) -> bool:
        raise NotImplementedError

    def _tracker_urls(self) -> tuple[str | None, ...]:
        """The tracker's own URLs that may hold credentials (e.g. a tracking server's)."""
        return ()

    def _request_limits(self) -> AbstractContextManager[object]:
        """A context bounding the tracker's requests (timeouts, retries); none by default."""
        return nullcontext()

    def _went_offline(self, hook: str) -> None:
        """The breaker opened in ``hook``: record that the tracker missed the rest of the run."""

    def _is_outage(self, exc: Exception) -> bool:
        """Whether ``exc`` says the tracker is unreachable (what the breaker counts); a failure
        of another kind (a bad value, a full disk) stays one warning and logging goes on."""
        text = str(exc)
        return isinstance(exc, ConnectionError | TimeoutError) or any(
            marker in text for marker in _OUTAGE_MARKERS
        )

    def _scrub(self, text: str) -> str:
        return scrub(text, *self._urls)

    def _safely(self, hook: str, action: Callable[[], None]) -> None:
        if self._off:
            return
        try:
            with self._request_limits():
                action()
            self._failures = 0
        except Exception as exc:  # noqa: BLE001 - a tracker must never break or lose a run
            logger.warning(
                "%s logging failed in %s (the optimization goes on): %s: %s",
                self.tracker,
                hook,
                type(exc).__name__,
                self._scrub(str(exc))[:500],
            )
            self._failed = (
                *self._failed,
                f"{hook}: {type(exc).__name__}: {self._scrub(str(exc))}"[:300],
            )
            self._failures = self._failures + 1 if self._is_outage(exc) else 0
            if not self._has_run():
                self._off = True
            elif self._failures >= self.breaker:
                self._off = True
                logger.warning(
                    "%s failed %d times in a row: logging to it is off for the rest of the run; "
                    "the run directory keeps everything (replay it with aevyra-reflex sync)",
                    self.tracker,
                    self._failures,
                )
                try:
                    self._went_offline(hook)
                except Exception as error:  # noqa: BLE001
                    logger.debug("could not record that %s went offline: %s", self.tracker, error)
