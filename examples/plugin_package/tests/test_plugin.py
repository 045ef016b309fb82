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
    {"id": f"q{i}", "input": f"colour {i}?", "ideal": ["red", "blue"][i % 2]} for i in range(60)
]


REVISION = (
    "<diagnosis>The model wraps the label in a sentence.</diagnosis>"
    "<edit>answer with the label alone</edit>"
    "<prompt>Name the colour. Answer with only the answer, nothing else.</prompt>"
)


def _dataset(tmp_path: Path) -> Path:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    return data


@pytest.fixture
def fake_responder() -> Callable[[FakeRequest], str]:
    """Answer with the label alone only when the prompt asks for it."""
    ideal = {row["input"]: row["ideal"] for row in ROWS}

    def respond(request: FakeRequest) -> str:
        if request.model == "fake/reasoner":  # the reasoning model of the `reflect` test
            return REVISION
        label = ideal[request.user]
        if "only the answer" in request.system:
            return label
        number = int(request.user.split()[1].rstrip("?"))
        return label if number % 3 == 0 else f"I would say {label}."

    return respond


def test_entry_point_registers_both() -> None:
    info = {i.name: i for i in get_registry().plugins()}["reflex_plugin_example"]
    assert (info.strategies, info.metrics) == (["suffixes", "reflect"], ["max_words"])


def test_max_words() -> None:
    metric = MaxWords(limit=2)
    assert metric.score("two words", Example("x", ())).value == 1.0
    verdict = metric.score("three words now", Example("x", ()))
    assert verdict.value == 0.0 and verdict.feedback == "answer has 3 words; at most 2 wanted"


def test_suffixes_strategy_improves_the_prompt(
    fake_model: FakeModel, recording_callback: RecordingCallback, tmp_path: Path
) -> None:
    result = (
        PromptOptimizer()
        .set_dataset(_dataset(tmp_path))
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


def test_reflect_strategy_revises_from_failing_rows(
    fake_model: FakeModel, recording_callback: RecordingCallback, tmp_path: Path
) -> None:
    result = (
        PromptOptimizer()
        .set_dataset(_dataset(tmp_path))
        .add_provider("fake/task")
        .add_metric("exact_match")
        .set_strategy("reflect", worst_k=2)
        .set_reasoning_model("fake/reasoner")
        .configure(run_dir=str(tmp_path / ".reflex"), max_iterations=3, batch_size=6)
        .run("Name the colour.", callbacks=[recording_callback])
    )
    assert result.best_prompt == "Name the colour. Answer with only the answer, nothing else."
    assert result.baseline is not None and result.baseline.mean_score < 1.0
    assert result.final is not None and result.final.mean_score == 1.0
    briefs = fake_model.calls_to("fake/reasoner")
    # the reasoner saw failing rows with their expected output, and a second revision was never
    # asked for: the revised prompt is perfect on every later minibatch
    assert len(briefs) == 1 and "expected: " in briefs[0].user and "I would say" in briefs[0].user
    first = result.iterations[0]
    assert first.accepted and first.change is not None and first.change > 0
    assert all(it.rejected == "already perfect" for it in result.iterations[1:])
