"""The fakes (reflex/testing/fakes.py): FakeModel behind the LiteLLM boundary (real
``litellm.acompletion`` calls reach it), its recorded requests, scripted faults and word-count
usage; RecordingCallback's record of a run's lifecycle."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import make_rows

from reflex import PromptOptimizer
from reflex.errors import ProviderError
from reflex.models.client import ClientSettings, ModelSpec, ProviderClient
from reflex.models.retry import RetryPolicy
from reflex.models.runner import LoopRunner
from reflex.testing import FakeModel, FakeRequest, RecordingCallback

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "say hi now"}]


def test_a_call_through_litellm_reaches_the_responder_and_is_recorded(
    runner: LoopRunner,
) -> None:
    fake = FakeModel(lambda r: f"{r.system} | {r.user}".upper(), provider="fakes").install()
    client = ProviderClient(cache=None)
    answer = runner.run(client.complete(ModelSpec("fakes/m1"), MESSAGES))
    assert answer.text == "BE BRIEF. | SAY HI NOW"
    assert (answer.prompt_tokens, answer.completion_tokens) == (5, 6)  # words in and out
    [request] = fake.requests
    assert (request.model, request.system, request.user) == ("fakes/m1", "Be brief.", "say hi now")
    assert request.messages == tuple(MESSAGES)
    assert fake.calls_to("fakes/m1") == [request] and fake.calls_to("fakes/other") == []


def test_a_scripted_fault_fails_the_call_it_names(runner: LoopRunner, litellm: Any) -> None:
    def fault(request: FakeRequest, number: int) -> BaseException | None:
        if number == 1:
            return litellm.AuthenticationError(message="bad key", llm_provider="x", model="m")
        return None

    fake = FakeModel(fault=fault, provider="fakefault").install()
    client = ProviderClient(ClientSettings(retry=RetryPolicy(max_retries=0)), cache=None)
    with pytest.raises(ProviderError, match="bad key"):
        runner.run(client.complete(ModelSpec("fakefault/m"), MESSAGES))
    assert runner.run(client.complete(ModelSpec("fakefault/m"), MESSAGES)).text == "say hi now"
    assert len(fake.requests) == 2  # the failed call was asked too


def test_the_recording_callback_sees_a_run_s_lifecycle_in_order(
    fake_model: FakeModel, tmp_path: Any
) -> None:
    recorder = RecordingCallback()
    (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path)
        .configure(max_iterations=2)
        .run("Classify the sentiment.", callbacks=[recorder])
    )
    hooks = recorder.hooks
    assert hooks[:2] == ["on_run_start", "on_baseline"] and hooks[-2:] == ["on_final", "on_run_end"]
    assert set(hooks[2:-2]) == {"on_iteration"} and len(hooks) == 4 + 2
    config, prompt = recorder.calls[0][1]
    assert prompt == "Classify the sentiment." and getattr(config, "max_iterations", None) == 2
