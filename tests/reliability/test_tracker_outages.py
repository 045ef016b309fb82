"""A callback that raises in every method never costs the run anything.

MLflow down / unreachable and W&B init failing are covered in ``test_mlflow_callback.py`` and
``test_wandb_callback.py``; this file covers the generic case for any callback.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from test_engine import START, builder

from reflex import Callback, OptimizationResult
from reflex.testing import FakeModel, RecordingCallback


class EverythingRaises(Callback):
    """Raises from every lifecycle and progress hook."""

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("on_"):

            def broken(*args: Any) -> None:
                raise ConnectionError(f"tracker unreachable in {name}")

            return broken
        return super().__getattribute__(name)


def test_a_callback_raising_everywhere_leaves_the_run_complete(
    fake_model: FakeModel, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clean: OptimizationResult = builder(tmp_path / "clean").run(START)
    recorder = RecordingCallback()
    with caplog.at_level(logging.WARNING):
        result = builder(tmp_path / "broken").run(START, callbacks=[EverythingRaises(), recorder])

    # The run and its own record are complete and identical to a run without the callback.
    assert result.completed and result.final is not None and result.run_dir is not None
    assert result.best_prompt == clean.best_prompt
    assert result.final.mean_score == clean.final.mean_score  # type: ignore[union-attr]
    saved = json.loads((Path(result.run_dir) / "result.json").read_text(encoding="utf-8"))
    assert saved["completed"] and saved["best_prompt"] == result.best_prompt
    # The callbacks after the broken one still heard everything.
    assert recorder.hooks[0] == "on_run_start" and recorder.hooks[-1] == "on_run_end"

    # One warning and one event for the first failure; the rest are counted, and the count is
    # one summary warning and event at the run's end (not one line per failure).
    warnings = [r.getMessage() for r in caplog.records if "EverythingRaises" in r.getMessage()]
    events = [
        json.loads(line)
        for line in (Path(result.run_dir) / "events.jsonl").read_text("utf-8").splitlines()
    ]
    failures = [e for e in events if e["type"] == "callback_failure"]
    assert [(e["callback"], e["hook"]) for e in failures] == [("EverythingRaises", "on_run_start")]
    assert "tracker unreachable in on_run_start" in failures[0]["error"]
    (summary,) = [e for e in events if e["type"] == "callback_failures"]
    hooks = summary["hooks"]
    assert {"on_run_start", "on_baseline", "on_iteration", "on_final", "on_run_end"} <= set(hooks)
    assert summary["failures"] == sum(hooks.values()) >= len(recorder.hooks)
    assert hooks["on_iteration"] == len(result.iterations)
    assert len(warnings) == 2 and "tracker unreachable" in warnings[0]
    assert warnings[1].startswith(f"callback EverythingRaises failed {summary['failures']} times")
