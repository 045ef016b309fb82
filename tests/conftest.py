"""Shared fixtures: a scripted fake task model + reasoning model behind the LiteLLM boundary."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from typing import Any

from reflex.models.client import load_litellm
from reflex.models.runner import LoopRunner
from reflex.plugins import reset_registry
from reflex.testing import FakeRequest

# pytester runs examples/plugin_package's own tests in-process (tests/test_plugin_package.py).
pytest_plugins = ["pytester"]

KEYWORD = "Answer with one word."
BETTER = f"Classify the sentiment. {KEYWORD}"
LABELS = ["positive", "negative"]


def make_rows(n: int = 30) -> list[dict[str, str]]:
    words = ["great", "awful", "fine", "bad", "lovely", "poor"]
    return [
        {
            "id": f"r{i:03d}",
            "input": f"review {i}: {words[i % len(words)]} film",
            "ideal": LABELS[i % 2],
        }
        for i in range(n)
    ]


ANSWERS = {row["input"]: row["ideal"] for row in make_rows(200)}


def task_answer(request: FakeRequest) -> str:
    """Correct when the prompt has KEYWORD; otherwise correct only on every third row."""
    ideal = ANSWERS.get(request.user, "unknown")
    if KEYWORD in request.system:
        return ideal
    index = int(request.user.split()[1].rstrip(":"))
    return ideal if index % 3 == 0 else f"I think this review is {ideal}."


def reasoner_answer(request: FakeRequest) -> str:
    return (
        "<diagnosis>Outputs are sentences, the metric wants one word.</diagnosis>\n"
        f"<edit>ask for a one-word answer</edit>\n<prompt>{BETTER}</prompt>"
    )


def responder(request: FakeRequest) -> str:
    if request.model.startswith("fake/reasoner"):
        return reasoner_answer(request)
    return task_answer(request)


@pytest.fixture(autouse=True)
def _isolated_registry() -> Iterator[None]:
    reset_registry()
    yield
    reset_registry()


@pytest.fixture
def fake_responder() -> Callable[[FakeRequest], str]:
    """Scripts the ``fake_model`` fixture of ``reflex.testing.pytest_plugin`` (pytest11)."""
    return responder


@pytest.fixture
def dataset_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in make_rows()), encoding="utf-8")
    return path


@pytest.fixture
def prompt_file(tmp_path: Path) -> Path:
    path = tmp_path / "prompt.md"
    path.write_text("Classify the sentiment.\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def litellm() -> Any:
    return load_litellm()


@pytest.fixture(scope="module")
def runner() -> Iterator[LoopRunner]:
    """A private event loop; closing it cancels what is left (LiteLLM's logging worker)."""
    loop = LoopRunner()
    yield loop
    loop.close()
