"""One LiteLLM call (reflex.models.litellm_call): the answer read through LiteLLM's full path,
its logging skipped only when nobody listens, and one price look-up per unpriced model."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from reflex.models import litellm_call
from reflex.models.client import ClientSettings, ProviderClient, load_litellm
from reflex.models.litellm_call import Completion, MalformedAnswer, call_once, usage_of
from reflex.models.retry import RetryPolicy
from reflex.models.runner import LoopRunner
from reflex.models.spec import ModelSpec
from reflex.testing import FakeModel
from reflex.testing.endpoint import FaultPlan, serve

MESSAGES = [{"role": "user", "content": "hi there"}]


@pytest.fixture
def full_path(litellm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call through ``litellm.acompletion`` (no lean transport), nobody listening."""
    monkeypatch.setenv("REFLEX_LEAN_TRANSPORT", "0")
    for name in litellm_call._LITELLM_CALLBACK_LISTS:
        monkeypatch.setattr(litellm, name, [])


def endpoint_spec(url: str) -> ModelSpec:
    return ModelSpec("openai/m", api_base=url, extra={"api_key": "sk-none"})


@pytest.mark.usefixtures("full_path")
def test_call_once_reads_text_and_usage_through_litellm(runner: LoopRunner, litellm: Any) -> None:
    with serve(usage=(321, 7)) as url:
        done = runner.run(call_once(litellm, endpoint_spec(url), MESSAGES, 3))
    assert isinstance(done, Completion)
    assert (done.text, done.prompt_tokens, done.completion_tokens) == ("hi there", 321, 7)
    assert done.attempts == 3 and not done.cached and done.deployment is None
    assert done.cost is None  # openai/m is not in LiteLLM's price map


@pytest.mark.usefixtures("full_path")
@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("no-choices", r"has no choices\[0\]\.message"),  # read by us
        ("null-message", r"not a chat completion \(LiteLLM: invalid"),  # refused by LiteLLM
    ],
    ids=["no-choices", "null-message"],
)
def test_an_answer_without_a_message_is_a_malformed_answer(
    runner: LoopRunner, litellm: Any, kind: str, said: str
) -> None:
    with serve(faults=FaultPlan(script=[kind])) as url, pytest.raises(MalformedAnswer, match=said):
        runner.run(call_once(litellm, endpoint_spec(url), MESSAGES, 1))


def test_usage_of_checks_the_counts_as_the_lean_transport_does() -> None:
    assert usage_of(SimpleNamespace()) == (0, 0)  # no usage at all: nothing counted
    usage = SimpleNamespace(prompt_tokens=12, completion_tokens=5)
    assert usage_of(SimpleNamespace(usage=usage)) == (12, 5)
    negative = SimpleNamespace(prompt_tokens=-1, completion_tokens=5)
    with pytest.raises(MalformedAnswer, match="prompt_tokens"):
        usage_of(SimpleNamespace(usage=negative))


def test_only_a_users_callback_counts_as_a_listener() -> None:
    ours = SimpleNamespace(reflex_internal=True)  # e.g. the Router pacer
    assert not litellm_call.litellm_listens(SimpleNamespace(callbacks=[ours]))
    assert not litellm_call.litellm_listens(SimpleNamespace(success_callback=None))
    assert litellm_call.litellm_listens(SimpleNamespace(_async_failure_callback=[object()]))


def test_litellm_logging_is_skipped_only_when_nobody_listens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    litellm = load_litellm()
    flag = litellm._internal_context.is_internal_call
    token = litellm_call._skip_litellm_logging(litellm)
    assert token is not None and flag.get() is True
    flag.reset(token)
    assert flag.get() is False
    monkeypatch.setattr(litellm, "success_callback", [lambda *a: None])
    assert litellm_call._skip_litellm_logging(litellm) is None
    assert litellm_call._skip_litellm_logging(SimpleNamespace()) is None  # no such switch


def test_a_litellm_callback_still_sees_every_call(
    runner: LoopRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    litellm = load_litellm()
    FakeModel(lambda r: "ok").install()
    from litellm.integrations.custom_logger import CustomLogger

    seen = threading.Event()

    class Listener(CustomLogger):
        async def async_log_success_event(self, *args: Any, **kwargs: Any) -> None:
            seen.set()

    monkeypatch.setattr(litellm, "callbacks", [Listener()])
    client = ProviderClient(ClientSettings(retry=RetryPolicy(max_retries=0)))
    completion = runner.run(client.complete(ModelSpec("fake/logged"), MESSAGES))
    assert completion.text == "ok"
    assert seen.wait(30)  # LiteLLM's logging worker delivers it shortly after the call


def test_a_registered_litellm_callback_sends_calls_through_litellm(
    runner: LoopRunner, litellm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    real = litellm.acompletion

    async def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["model"])
        return await real(*args, **kwargs)

    monkeypatch.setattr(litellm, "acompletion", recording)
    monkeypatch.setattr(litellm, "success_callback", [lambda *_: None])
    with serve() as url:
        spec = ModelSpec("openai/gpt-4o-mini", api_base=url, extra={"api_key": "k"})
        assert runner.run(call_once(litellm, spec, MESSAGES, 1)).text == "hi there"
    assert seen == ["openai/gpt-4o-mini"]


def test_an_unpriced_model_is_looked_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Any] = []

    def completion_cost(completion_response: Any) -> float:
        asked.append(completion_response)
        raise ValueError("This model isn't mapped yet")

    fake_litellm = SimpleNamespace(completion_cost=completion_cost)
    response = SimpleNamespace(model="nowhere-model-x", _hidden_params={"response_cost": None})
    monkeypatch.setattr(litellm_call, "_UNPRICED", set())
    assert litellm_call._cost(fake_litellm, response) is None
    assert litellm_call._cost(fake_litellm, response) is None
    assert len(asked) == 1
    priced = SimpleNamespace(model="nowhere-model-x", _hidden_params={"response_cost": 0.5})
    assert litellm_call._cost(fake_litellm, priced) == 0.5  # LiteLLM's own price still wins
