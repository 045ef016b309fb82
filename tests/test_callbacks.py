"""Callbacks are any object with any subset of the hooks; the dispatcher has one typed method per
hook and never lets a callback stop a run."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from test_engine import START, builder

from reflex import Callback, IterationRecord, OptimizationResult, RunConfig
from reflex.callbacks import CallbackDispatcher
from reflex.testing import FakeModel, RecordingCallback


class MyCallback:
    """The docs' custom callback: a plain class, two hooks, no base class."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_run_start(self, config: RunConfig, initial_prompt: str) -> None:
        self.seen.append(f"start:{config.strategy}")

    def on_iteration(self, record: IterationRecord) -> None:
        self.seen.append(f"iteration:{record.iteration}")


def test_a_plain_class_with_some_hooks_is_a_callback(fake_model: FakeModel, tmp_path: Path) -> None:
    mine, recorder = MyCallback(), RecordingCallback()
    result = builder(tmp_path).run(START, callbacks=[mine, recorder])
    assert result.completed and recorder.hooks[-1] == "on_run_end"
    assert mine.seen == ["start:iterative"] + [
        f"iteration:{r.iteration}" for r in result.iterations
    ]


def test_a_raising_plain_callback_is_a_warning_naming_it(
    fake_model: FakeModel, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Flaky:
        def on_iteration(self, record: IterationRecord) -> None:
            raise ConnectionError("tracker down")

    recorder = RecordingCallback()
    with caplog.at_level(logging.WARNING):
        result = builder(tmp_path).run(START, callbacks=[Flaky(), recorder])
    assert result.completed and recorder.hooks[-1] == "on_run_end"
    warnings = [r.getMessage() for r in caplog.records if "Flaky" in r.getMessage()]
    n = len(result.iterations)
    assert n > 1 and len(warnings) == 2  # the first failure, then the run-end summary
    assert "Flaky.on_iteration" in warnings[0] and "tracker down" in warnings[0]
    assert warnings[1] == f"callback Flaky failed {n} times in hooks on_iteration ({n})"
    events = (Path(str(result.run_dir)) / "events.jsonl").read_text("utf-8").splitlines()
    failures = [e for e in map(json.loads, events) if e["type"] == "callback_failure"]
    assert [(e["callback"], e["hook"]) for e in failures] == [("Flaky", "on_iteration")]
    summary = [e for e in map(json.loads, events) if e["type"] == "callback_failures"]
    assert [(e["callback"], e["failures"], e["hooks"]) for e in summary] == [
        ("Flaky", n, {"on_iteration": n})
    ]


def test_an_object_whose_attribute_lookup_raises_never_stops_the_run(
    fake_model: FakeModel, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Proxy:
        """A remote-object proxy: every attribute lookup goes over a broken connection."""

        def __getattr__(self, name: str) -> Any:
            raise ConnectionError(f"cannot look up {name}")

    with caplog.at_level(logging.WARNING):
        result = builder(tmp_path).run(START, callbacks=[Proxy()])
    assert result.completed
    assert any("Proxy.on_run_start" in r.getMessage() for r in caplog.records)


def test_the_dispatcher_has_one_typed_method_per_hook() -> None:
    hooks = sorted(name for name in vars(Callback) if name.startswith("on_"))
    methods = sorted(
        f"on_{name}"
        for name, value in vars(CallbackDispatcher).items()
        if callable(value) and not name.startswith("_")
    )
    assert methods == hooks


def test_the_typed_methods_reach_the_hooks_in_order() -> None:
    recorder = RecordingCallback()
    result = OptimizationResult(
        best_prompt="p", best_score=None, baseline=None, final=None, initial_prompt="p"
    )
    error = RuntimeError("boom")
    dispatcher = CallbackDispatcher([object(), MyCallback(), recorder])
    dispatcher.run_end(result)
    dispatcher.run_error(error, result)
    dispatcher.evaluation_advance(3)  # progress hooks are optional: nobody here has one
    assert recorder.calls == [("on_run_end", (result,)), ("on_run_error", (error, result))]
