"""GuardedCallback (reflex/callbacks/guarded.py): a failing tracker is a warning, never the end
of a run; one that is down goes offline after ``breaker`` unreachable calls in a row."""

from __future__ import annotations

import logging

import pytest

from reflex.callbacks.guarded import GuardedCallback, run_urls
from reflex.config import RunConfig

URL = "http://user:s3cret-token@127.0.0.1:9/v1"


class Tracker(GuardedCallback):
    """A tracker whose calls fail with the errors queued in ``failures`` (None: it works)."""

    tracker = "fake-tracker"

    def __init__(self, failures: list[Exception | None], *, run_exists: bool = True) -> None:
        self.failures = failures
        self.run_exists = run_exists
        self.sent: list[str] = []
        self.offline_in: list[str] = []

    def _start(self, config: RunConfig, initial_prompt: str) -> None:
        self.log("start")

    def _has_run(self) -> bool:
        return self.run_exists

    def _went_offline(self, hook: str) -> None:
        self.offline_in.append(hook)

    def log(self, what: str) -> None:
        failure = self.failures.pop(0) if self.failures else None
        if failure is not None:
            raise failure
        self.sent.append(what)

    def hook(self, name: str) -> None:
        self._safely(name, lambda: self.log(name))


def config() -> RunConfig:
    return RunConfig(models=["fake/task"], api_base=URL)


def test_a_tracker_down_before_its_run_exists_costs_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tracker = Tracker([ConnectionError(f"cannot reach {URL}")], run_exists=False)
    with caplog.at_level(logging.WARNING):
        tracker.on_run_start(config(), "prompt")
        tracker.hook("on_iteration")
    assert tracker.sent == [] and len(caplog.records) == 1
    assert tracker.missed()[-1].startswith("logging was switched off")
    assert "s3cret-token" not in caplog.text and "s3cret-token" not in " ".join(tracker.missed())


def test_the_breaker_opens_after_unreachable_calls_in_a_row_and_records_it() -> None:
    outage = [None, ConnectionError("Connection refused"), TimeoutError("timed out")]
    tracker = Tracker(outage)
    tracker.on_run_start(config(), "prompt")
    tracker.hook("on_iteration")
    tracker.hook("on_final")
    tracker.hook("on_run_end")  # offline by now: not attempted
    assert tracker.sent == ["start"] and tracker.offline_in == ["on_final"]
    assert tracker.missed() == [
        "on_iteration: ConnectionError: Connection refused",
        "on_final: TimeoutError: timed out",
        "logging was switched off: the rest of the run was not sent",
    ]


def test_other_failures_and_a_success_between_outages_keep_logging_on() -> None:
    failures = [None, ConnectionError("Connection reset"), None, ValueError("bad value")]
    failures += [ConnectionError("Connection reset")]
    tracker = Tracker(failures)
    tracker.on_run_start(config(), "prompt")
    for name in ("a", "b", "c", "d", "e"):
        tracker.hook(name)
    assert tracker.sent == ["start", "b", "e"] and tracker.offline_in == []
    assert not any(line.startswith("logging was switched off") for line in tracker.missed())


def test_the_urls_no_tracker_may_see_are_the_runs_endpoints_and_cache() -> None:
    settings = RunConfig(
        models=["fake/task"], api_base=URL, reasoning_base_url=None, cache_url="redis://x:y@h/0"
    )
    assert run_urls(settings) == (URL, None, "redis://x:y@h/0")
