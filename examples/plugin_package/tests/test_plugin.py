"""Tests of the example plugin, written with the fixtures aevyra-reflex ships for plugin authors.

``fake_model``, ``fake_responder``, ``recording_callback`` and ``register_plugin`` come from
``reflex.testing.pytest_plugin`` (a pytest11 entry point): no conftest.py needed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from reflex_plugin_example import MaxWords

from reflex import Example, PromptOptimizer
from reflex.plugins import get_registry
from reflex.testing import FakeModel, FakeRequest, RecordingCallback

ROWS = [
    {"id": f"q{i}", "input": f"colour {i}?", "ideal": ["red", "blue"][i % 2]} for i in range(20)
]


@pytest.fixture
def fake_responder() -> Callable[[FakeRequest], str]:
    """Answer with the label alone only when the prompt asks for it."""
    ideal = {row["input"]: row["ideal"] for row in ROWS}

    def respond(request: FakeRequest) -> str:
        label = ideal[request.user]
        if "only the answer" in request.system:
            return label
        number = int(request.user.split()[1].rstrip("?"))
        return label if number % 3 == 0 else f"I would say {label}."

    return respond


def test_entry_point_registers_both() -> None:
    info = {i.name: i for i in get_registry().plugins()}["reflex_plugin_example"]
    assert (info.strategies, info.metrics) == (["suffixes"], ["max_words"])


def test_max_words() -> None:
    metric = MaxWords(limit=2)
    assert metric.score("two words", Example("x", ())).value == 1.0
    verdict = metric.score("three words now", Example("x", ()))
    assert verdict.value == 0.0 and verdict.feedback == "answer has 3 words; at most 2 wanted"


def test_suffixes_strategy_improves_the_prompt(
    fake_model: FakeModel, recording_callback: RecordingCallback, tmp_path: Path
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    result = (
        PromptOptimizer()
        .set_dataset(data)
        .add_provider("fake/task")
        .add_metric("exact_match")
        .add_metric("max_words", limit=1)
        .set_strategy("suffixes")
        .configure(run_dir=str(tmp_path / ".reflex"))
        .run("Name the colour.", callbacks=[recording_callback])
    )
    assert result.best_prompt == "Name the colour.\nAnswer with only the answer, nothing else."
    assert result.final is not None and result.final.mean_score == 1.0
    assert recording_callback.hooks.count("on_iteration") == 2
    assert all(request.model == "fake/task" for request in fake_model.requests)
