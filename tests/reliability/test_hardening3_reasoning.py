"""Issue 29 item 14 (d): an iteration whose reasoning answer has no diagnosis section records
the whole answer as its reasoning, so ``reasoning/iter_NNN.txt`` is never an empty file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import BETTER, task_answer
from mlflow import MlflowClient
from test_engine import START, builder
from test_mlflow_callback import text

from reflex.testing import FakeModel, FakeRequest
from reflex_mlflow import MLflowCallback

ANSWER = f"The outputs are sentences; I ask for one word.\n<prompt>{BETTER}</prompt>"


def no_diagnosis(request: FakeRequest) -> str:
    return ANSWER if request.model.startswith("fake/reasoner") else task_answer(request)


@pytest.fixture
def fake_responder() -> Callable[[FakeRequest], str]:
    return no_diagnosis


def test_the_reasoning_artifact_holds_the_whole_answer(
    fake_model: FakeModel,
    tmp_path: Path,
    uri: str,
) -> None:
    callback = MLflowCallback(tracking_uri=uri, log_prompt_each_iter=True)
    result = builder(tmp_path).run(START, callbacks=[callback])
    first = result.iterations[0]  # the reasoning model proposed BETTER (later: nothing to fix)
    assert first.system_prompt == BETTER and first.reasoning == ANSWER
    client = MlflowClient(tracking_uri=uri)
    name = "reasoning/iter_001.txt"
    assert text(client, str(callback.run_id), name) == ANSWER
