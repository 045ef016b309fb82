"""Issue 29 item 14 (a): a user callback that raises in every hook costs one warning and one
``callback_failure`` event, then one summary at the run's end, not one line per failure."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from test_engine import START, builder

from reflex import Callback
from reflex.testing import FakeModel, RecordingCallback


class Broken(Callback):
    """Raises from every lifecycle and progress hook (there are hundreds of progress calls)."""

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("on_"):

            def broken(*args: Any) -> None:
                raise ValueError(f"bug in {name}")

            return broken
        return super().__getattribute__(name)


class AlsoBroken(Broken):
    pass


def test_two_callbacks_raising_everywhere_cost_two_warnings_each(
    fake_model: FakeModel, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = RecordingCallback()
    with caplog.at_level(logging.WARNING):
        result = builder(tmp_path).run(START, callbacks=[Broken(), AlsoBroken(), recorder])
    assert result.completed and recorder.hooks[-1] == "on_run_end"
    run = Path(str(result.run_dir))
    events = [json.loads(line) for line in (run / "events.jsonl").read_text("utf-8").splitlines()]
    failures = [e for e in events if e["type"] == "callback_failure"]
    assert [(e["callback"], e["hook"]) for e in failures] == [
        ("Broken", "on_run_start"),
        ("AlsoBroken", "on_run_start"),
    ]
    assert failures[0]["error"] == "bug in on_run_start"
    summaries = {e["callback"]: e for e in events if e["type"] == "callback_failures"}
    assert set(summaries) == {"Broken", "AlsoBroken"}
    for summary in summaries.values():
        hooks = summary["hooks"]
        assert hooks["on_iteration"] == len(result.iterations)
        assert hooks["on_evaluation_advance"] > 10  # the flood there was
        assert summary["failures"] == sum(hooks.values())
    messages = [r.getMessage() for r in caplog.records if "Broken" in r.getMessage()]
    assert len(messages) == 4  # per callback: its first failure, and the run-end summary
    total = summaries["Broken"]["failures"]
    assert f"callback Broken failed {total} times in hooks on_run_start (1), " in messages[2]


def test_the_summary_comes_after_a_failed_run_too(
    fake_model: FakeModel, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A run that fails still says how often each callback failed (on_run_error)."""
    with caplog.at_level(logging.WARNING), pytest.raises(Exception, match="budget"):
        builder(tmp_path).set_budget(max_calls=3).run(START, callbacks=[Broken()])
    summaries = [
        r.getMessage() for r in caplog.records if "callback Broken failed" in r.getMessage()
    ]
    assert len(summaries) == 1 and "on_run_error (1)" in summaries[0]
