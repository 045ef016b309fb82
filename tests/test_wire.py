"""The lean transport (reflex.models.wire) against LiteLLM's full path, on the local endpoint.

Each test makes the same call twice, once over the lean transport (with ``litellm.acompletion``
made to fail, so the call provably bypasses it) and once through LiteLLM
(``REFLEX_LEAN_TRANSPORT=0``), and compares what the endpoint received and what came back.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest

from reflex.models import litellm_call
from reflex.models.client import ClientSettings, ProviderClient, load_litellm
from reflex.models.litellm_call import Completion, call_once
from reflex.models.retry import (
    RetryPolicy,
    error_name,
    is_rate_limit,
    is_transient,
    retry_after_seconds,
)
from reflex.models.runner import LoopRunner
from reflex.models.spec import ModelSpec
from reflex.models.wire import lean_candidate, lean_route
from reflex.testing.endpoint import FaultPlan, serve
from reflex.testing.http import Request

MESSAGES = [
    {"role": "system", "content": "Answer briefly. Ünïcode ✓"},
    {"role": "user", "content": "what is 2 + 2?"},
]
MODELS = ["openai/gpt-4o-mini", "openai/unpriced-bench", "hosted_vllm/qwen"]


@pytest.fixture(scope="module")
def litellm() -> Any:
    return load_litellm()


@pytest.fixture(autouse=True)
def no_litellm_callbacks(litellm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """No LiteLLM callback registered (earlier tests in the process may have left one, which
    rightly sends every call through LiteLLM's full path)."""
    for name in litellm_call._LITELLM_CALLBACK_LISTS:
        monkeypatch.setattr(litellm, name, [])


def forbid_litellm(litellm: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    async def forbidden(*_: object, **__: object) -> None:
        raise AssertionError("the lean transport called litellm.acompletion")

    with monkeypatch.context() as patch:
        patch.setattr(litellm, "acompletion", forbidden)
        yield


def spec_for(model: str, url: str, **extra: object) -> ModelSpec:
    plain = {"api_key": "sk-test", "top_p": 0.5, "stop": ["\n\n"], **extra}
    return ModelSpec(model, api_base=url, max_tokens=32, extra=plain)


def both(
    runner: LoopRunner,
    litellm: Any,
    monkeypatch: pytest.MonkeyPatch,
    make: Callable[[], Coroutine[Any, Any, Completion]],
) -> tuple[Completion | BaseException, Completion | BaseException]:
    """(lean result, LiteLLM result) of the same call; an exception is returned, not raised."""
    results: list[Completion | BaseException] = []
    for lean in (True, False):
        if not lean:
            monkeypatch.setenv("REFLEX_LEAN_TRANSPORT", "0")
        guard = forbid_litellm(litellm, monkeypatch) if lean else iter([None])
        next(guard)
        try:
            results.append(runner.run(make()))
        except Exception as exc:  # noqa: BLE001 - compared below
            results.append(exc)
        finally:
            next(guard, None)
    monkeypatch.delenv("REFLEX_LEAN_TRANSPORT")
    return results[0], results[1]


@pytest.mark.parametrize("model", MODELS)
def test_same_request_text_usage_and_cost_as_litellm(
    runner: LoopRunner, litellm: Any, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    captured: list[Request] = []
    with serve(capture=captured, usage=(1234, 56)) as url:
        spec = spec_for(model, url)
        assert lean_route(litellm, spec) is not None
        lean, full = both(
            runner, litellm, monkeypatch, lambda: call_once(litellm, spec, MESSAGES, 1)
        )
    assert isinstance(lean, Completion) and isinstance(full, Completion), (lean, full)
    lean_request, full_request = captured
    assert json.loads(lean_request.body) == json.loads(full_request.body)
    assert lean_request.path == full_request.path
    assert lean_request.headers["authorization"] == full_request.headers["authorization"]
    assert (lean.text, lean.prompt_tokens, lean.completion_tokens) == (
        full.text,
        full.prompt_tokens,
        full.completion_tokens,
    )
    assert lean.text == "what is 2 + 2?" and lean.prompt_tokens == 1234
    priced = model == "openai/gpt-4o-mini"  # the others are not in LiteLLM's price map
    if priced:
        assert full.cost is not None and full.cost > 0
        assert lean.cost == pytest.approx(full.cost, rel=1e-9)
    else:
        assert lean.cost is None and full.cost is None


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "hosted_vllm/qwen"])
@pytest.mark.parametrize(
    "kind", ["429", "429-retry-after", "500", "503", "400", "401", "404", "drop", "malformed"]
)
def test_failures_classify_as_litellm_does(
    runner: LoopRunner, litellm: Any, monkeypatch: pytest.MonkeyPatch, kind: str, model: str
) -> None:
    with serve(faults=FaultPlan(script=[kind, kind], retry_after=7)) as url:
        spec = spec_for(model, url)
        lean, full = both(
            runner, litellm, monkeypatch, lambda: call_once(litellm, spec, MESSAGES, 1)
        )
    assert isinstance(lean, Exception) and isinstance(full, Exception), (lean, full)
    assert error_name(lean) == error_name(full), (lean, full)
    assert is_transient(lean) is is_transient(full)
    assert is_rate_limit(lean) is is_rate_limit(full)
    assert retry_after_seconds(lean) == retry_after_seconds(full)
    assert getattr(lean, "status_code", None) == getattr(full, "status_code", None)
    if kind == "429-retry-after":
        assert retry_after_seconds(lean) == 7


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "hosted_vllm/qwen"])
def test_a_hung_request_times_out_as_litellm_does(
    runner: LoopRunner, litellm: Any, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    with serve(faults=FaultPlan(script=["timeout", "timeout"], hang=30)) as url:
        spec = ModelSpec(model, api_base=url, timeout=0.5, extra={"api_key": "k"})
        lean, full = both(
            runner, litellm, monkeypatch, lambda: call_once(litellm, spec, MESSAGES, 1)
        )
    assert error_name(lean) == error_name(full) == "Timeout"
    assert is_transient(lean) and is_transient(full)


def test_retries_ledger_and_cache_identical_through_the_client(
    runner: LoopRunner, litellm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    faults = FaultPlan(
        rate=0.5,
        kinds=("429-retry-after", "500", "503", "drop"),
        max_per_request=2,
        retry_after=0.01,
    )
    ledgers, requests = [], []
    for lean in (True, False):
        if not lean:
            monkeypatch.setenv("REFLEX_LEAN_TRANSPORT", "0")
        client = ProviderClient(
            ClientSettings(max_workers=4, retry=RetryPolicy(base_delay=0.001, max_delay=0.01))
        )
        with serve(faults=faults, usage=(10, 2)) as url:
            spec = ModelSpec("openai/gpt-4o-mini", api_base=url, extra={"api_key": "k"})

            async def run(client: ProviderClient = client, spec: ModelSpec = spec) -> list[str]:
                calls = [
                    client.complete(spec, [{"role": "user", "content": f"q{i}"}]) for i in range(16)
                ]
                return [answer.text for answer in await asyncio.gather(*calls)]

            assert runner.run(run()) == [f"q{i}" for i in range(16)]
            requests.append(url.stats().requests)
        ledgers.append(client.ledger.to_dict())
    assert ledgers[0] == ledgers[1]
    assert ledgers[0]["task"]["retries"] > 0 and requests[0] == requests[1]


def test_a_call_cancelled_by_a_deadline_leaves_the_transport_usable(
    runner: LoopRunner, litellm: Any
) -> None:
    gate = threading.Event()
    with serve(gate=gate) as url:
        spec = ModelSpec("openai/gpt-4o-mini", api_base=url, extra={"api_key": "k"})

        async def deadline() -> Completion:
            return await asyncio.wait_for(call_once(litellm, spec, MESSAGES, 1), 0.3)

        with pytest.raises(asyncio.TimeoutError):
            runner.run(deadline())
        gate.set()
        assert runner.run(call_once(litellm, spec, MESSAGES, 2)).text == "what is 2 + 2?"


@pytest.mark.parametrize(
    ("model", "extra"),
    [
        ("anthropic/claude-3-5-haiku-latest", {}),  # not an OpenAI-wire provider
        ("openai/gpt-4o-mini", {"response_format": {"type": "json_object"}}),  # not a plain param
        ("openai/gpt-4o-mini", {"extra_headers": {"X-A": "1"}}),
        ("openai/responses/gpt-4o-mini", {}),  # LiteLLM bridges it to the Responses API
        ("openai/o1-pro", {}),  # a Responses-only model
        ("openai/gpt-5", {}),  # temperature 0 refused by LiteLLM: its full path raises it
        ("openai/gpt-4o-mini", {"api_base": "http://127.0.0.1:9/v1?api-key=q"}),  # SDK's join
        ("openai/gpt-4o-mini", {"api_base": "http://u:p@127.0.0.1:9/v1"}),  # LiteLLM refuses
    ],
)
def test_other_providers_and_parameters_take_litellms_full_path(
    litellm: Any, model: str, extra: dict[str, object]
) -> None:
    base = str(extra.pop("api_base", "http://127.0.0.1:9/v1"))
    spec = ModelSpec(model, api_base=base, extra={"api_key": "k", **extra})
    assert lean_route(litellm, spec) is None


def test_switches_follow_the_environment_and_litellm_settings(
    litellm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = ModelSpec("openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1", extra={"api_key": "k"})
    route = lean_route(litellm, spec)
    assert route is not None and route.headers["Authorization"] == "Bearer k"
    monkeypatch.setenv("REFLEX_LEAN_TRANSPORT", "0")
    assert lean_route(litellm, spec) is None
    monkeypatch.delenv("REFLEX_LEAN_TRANSPORT")
    monkeypatch.setenv("OPENAI_ORGANIZATION", "org-1")  # the SDK would send a header for it
    assert lean_route(litellm, spec) is None
    monkeypatch.delenv("OPENAI_ORGANIZATION")
    keyless = ModelSpec("openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    found = lean_route(litellm, keyless)
    assert found is not None and found.headers["Authorization"] == "Bearer sk-from-env"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-rotated")  # a changed key is seen on the next call
    found = lean_route(litellm, keyless)
    assert found is not None and found.headers["Authorization"] == "Bearer sk-rotated"


def test_lean_calls_stay_in_the_run_process_with_client_processes_set(
    runner: LoopRunner, litellm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = ProviderClient(ClientSettings(max_workers=4, processes=2))
    with serve() as url:
        spec = ModelSpec("openai/gpt-4o-mini", api_base=url, extra={"api_key": "k"})
        assert runner.run(client.complete(spec, MESSAGES)).text == "what is 2 + 2?"
    assert client.offload is None  # no client process was started for it
    assert lean_candidate(spec) and not lean_candidate(ModelSpec("anthropic/claude-x"))
    assert not lean_candidate(ModelSpec("openai/x", extra={"response_format": {"type": "x"}}))
    monkeypatch.setenv("REFLEX_LEAN_TRANSPORT", "0")  # then client processes take them
    assert not lean_candidate(spec)
