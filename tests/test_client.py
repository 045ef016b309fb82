"""Tests for reflex.models.client: real ``litellm.acompletion`` calls against fakes behind the
LiteLLM custom-provider boundary (no mocks): usage, cost, retries, errors and concurrency.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import httpx
import pytest
from conftest import until

from reflex.errors import ProviderError, TransientProviderError
from reflex.models.client import (
    ClientSettings,
    Completion,
    ModelSpec,
    ProviderClient,
    register_provider,
)
from reflex.models.retry import RetryPolicy
from reflex.models.runner import LoopRunner
from reflex.testing import FakeModel, FakeRequest

FAST = RetryPolicy(max_retries=3, base_delay=0.0)
USER = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "say hi now"}]


def call(
    runner: LoopRunner,
    client: ProviderClient,
    model: str = "fake/m",
    messages: Sequence[dict[str, str]] = USER,
    **kwargs: Any,
) -> Completion:
    return runner.run(client.complete(ModelSpec(model), messages, **kwargs))


def faulty(make_error: Callable[[int], BaseException | None]) -> FakeModel:
    return FakeModel(lambda r: "hello there", fault=lambda r, n: make_error(n)).install()


def rate_limit(litellm: Any) -> BaseException:
    return litellm.RateLimitError(message="slow down", llm_provider="openai", model="m")


# --- parse_model / ModelSpec ---------------------------------------------------------------


# --- a plain call through LiteLLM ----------------------------------------------------------


def test_completion_through_the_litellm_boundary(runner: LoopRunner) -> None:
    fake = FakeModel(lambda r: f"echo: {r.user}").install()
    client = ProviderClient(ClientSettings(retry=FAST))
    spec = ModelSpec("fake/m", temperature=0.7)
    out = runner.run(client.complete(spec, USER))
    assert out.text == "echo: say hi now"
    assert (out.prompt_tokens, out.completion_tokens) == (5, 4)  # word counts of in/out
    assert out.attempts == 1 and out.cached is False
    [request] = fake.requests
    assert (request.model, request.system, request.user) == ("fake/m", "Be brief.", "say hi now")
    assert request.params.get("temperature") == 0.7
    task = client.ledger.by_role["task"]
    assert (task.calls, task.prompt_tokens, task.completion_tokens, task.retries) == (1, 5, 4, 0)


def test_usage_is_kept_per_role(runner: LoopRunner) -> None:
    FakeModel().install()
    client = ProviderClient(ClientSettings(retry=FAST))
    call(runner, client, role="judge")
    call(runner, client, role="reasoning")
    call(runner, client, role="reasoning")
    calls = {role: usage.calls for role, usage in client.ledger.by_role.items()}
    assert calls == {"task": 0, "judge": 1, "reasoning": 2}
    assert client.ledger.total().calls == 3


# --- cost ----------------------------------------------------------------------------------


@pytest.fixture
def priced_model(litellm: Any) -> Iterator[str]:
    name = "fake/reflex-test-priced"
    litellm.register_model(
        {
            name: {
                "input_cost_per_token": 0.001,
                "output_cost_per_token": 0.002,
                "litellm_provider": "fake",
                "mode": "chat",
            }
        }
    )
    yield name
    litellm.model_cost.pop(name, None)


def test_cost_for_a_model_litellm_has_a_price_for(runner: LoopRunner, priced_model: str) -> None:
    FakeModel(lambda r: "two words").install()
    client = ProviderClient(ClientSettings(retry=FAST))
    out = call(runner, client, priced_model)
    assert out.cost == pytest.approx(5 * 0.001 + 2 * 0.002)
    task = client.ledger.by_role["task"]
    assert task.cost == pytest.approx(out.cost) and task.cost_unknown == 0


def test_unknown_model_cost_is_none_and_counted_unknown(runner: LoopRunner) -> None:
    FakeModel().install()
    client = ProviderClient(ClientSettings(retry=FAST))
    out = call(runner, client, "fake/no-price-known")
    assert out.cost is None
    task = client.ledger.by_role["task"]
    assert task.cost == 0.0 and task.cost_unknown == 1


# --- retries end to end --------------------------------------------------------------------


def test_transient_faults_are_retried_and_usage_counted_once(
    runner: LoopRunner, litellm: Any
) -> None:
    fake = faulty(lambda n: rate_limit(litellm) if n <= 2 else None)
    seen: list[tuple[str, int, str, float]] = []
    client = ProviderClient(
        ClientSettings(retry=FAST),
        on_retry=lambda m, a, e, d, r: seen.append((m, a, type(e).__name__, d)),
    )
    out = call(runner, client)
    assert out.text == "hello there" and out.attempts == 3
    assert len(fake.requests) == 3
    task = client.ledger.by_role["task"]
    assert (task.calls, task.retries) == (1, 2)
    assert (
        (task.prompt_tokens, task.completion_tokens)
        == (out.prompt_tokens, out.completion_tokens)
        == (5, 2)
    )
    assert seen == [("fake/m", 1, "RateLimitError", 0.0), ("fake/m", 2, "RateLimitError", 0.0)]


@pytest.mark.parametrize(
    "name", ["InternalServerError", "ServiceUnavailableError", "Timeout", "APIConnectionError"]
)
def test_each_transient_class_is_retried(runner: LoopRunner, litellm: Any, name: str) -> None:
    error = getattr(litellm, name)
    fake = faulty(
        lambda n: (
            error(message="Connection error.", llm_provider="openai", model="m") if n == 1 else None
        )
    )
    out = call(runner, ProviderClient(ClientSettings(retry=FAST)))
    assert out.attempts == 2 and len(fake.requests) == 2


def test_plain_connection_reset_is_retried(runner: LoopRunner) -> None:
    fake = faulty(lambda n: ConnectionResetError("peer reset") if n == 1 else None)
    out = call(runner, ProviderClient(ClientSettings(retry=FAST)))
    assert out.text == "hello there" and len(fake.requests) == 2


@pytest.mark.parametrize(
    ("name", "message", "hint"),
    [
        ("AuthenticationError", "Incorrect API key provided", "API key"),
        ("InternalServerError", "OpenAIException - Missing credentials", "API key"),
        ("ContextWindowExceededError", "maximum context length is 8192", "shorten"),
        ("NotFoundError", "model gpt-9 does not exist", "model name"),
        ("BadRequestError", "temperature must be <= 2", "request parameters"),
        ("RateLimitError", "You exceeded your current quota", "quota"),
    ],
)
def test_permanent_fault_raises_provider_error_after_one_attempt(
    runner: LoopRunner, litellm: Any, name: str, message: str, hint: str
) -> None:
    error = getattr(litellm, name)
    fake = faulty(
        lambda n: error(message=f"{message}\nsecond line", llm_provider="openai", model="m")
    )
    retried: list[int] = []
    client = ProviderClient(
        ClientSettings(retry=FAST), on_retry=lambda m, a, e, d, r: retried.append(a)
    )
    with pytest.raises(ProviderError) as info:
        call(runner, client, "fake/precise")
    assert not isinstance(info.value, TransientProviderError)
    assert len(fake.requests) == 1 and retried == []
    text = str(info.value)
    assert "\n" not in text and text.startswith("fake/precise:") and hint in text
    assert info.value.model == "fake/precise"
    assert isinstance(info.value.__cause__, error)
    assert client.ledger.by_role["task"].calls == 0


def test_retries_exhausted_raise_transient_provider_error(runner: LoopRunner, litellm: Any) -> None:
    fake = faulty(lambda n: rate_limit(litellm))
    attempts: list[int] = []
    client = ProviderClient(
        ClientSettings(retry=RetryPolicy(max_retries=2, base_delay=0.0)),
        on_retry=lambda m, a, e, d, r: attempts.append(a),
    )
    with pytest.raises(TransientProviderError) as info:
        call(runner, client)
    assert len(fake.requests) == 3 and attempts == [1, 2]
    text = str(info.value)
    assert "\n" not in text and "fake/m" in text and "3 attempts" in text
    assert "RateLimitError" in text and "--max-workers" in text
    task = client.ledger.by_role["task"]
    assert (task.calls, task.retries, task.tokens) == (0, 2, 0)


def test_zero_retries_fails_on_first_transient_error(runner: LoopRunner, litellm: Any) -> None:
    fake = faulty(lambda n: rate_limit(litellm))
    with pytest.raises(TransientProviderError):
        call(runner, ProviderClient(ClientSettings(retry=RetryPolicy(max_retries=0))))
    assert len(fake.requests) == 1


def test_retry_after_from_the_provider_is_used_end_to_end(runner: LoopRunner, litellm: Any) -> None:
    def fault(n: int) -> BaseException | None:
        if n > 1:
            return None
        return litellm.RateLimitError(
            message="slow",
            llm_provider="openai",
            model="m",
            response=httpx.Response(429, headers={"retry-after": "0.01"}),
        )

    faulty(fault)
    delays: list[float] = []
    # base_delay=30 would hang the test if the Retry-After header were ignored.
    client = ProviderClient(
        ClientSettings(retry=RetryPolicy(base_delay=30.0, max_delay=60.0)),
        on_retry=lambda m, a, e, d, r: delays.append(d),
    )
    assert call(runner, client).attempts == 2
    assert delays == [0.01]


# --- concurrency ---------------------------------------------------------------------------


class _InFlight:
    """Counts concurrent calls inside an async fake provider (the real acompletion shape)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0
        self.total = 0

    def enter(self) -> None:
        with self.lock:
            self.now += 1
            self.total += 1
            self.peak = max(self.peak, self.now)

    def leave(self) -> None:
        with self.lock:
            self.now -= 1


def _slow_provider(tracker: _InFlight, delay: float, hold: int = 0) -> Callable[[Any], Any]:
    """``hold``: every call waits until that many have been in flight at once (then ``delay``),
    so a limit is reached however slowly the machine starts the calls."""

    def factory(litellm: Any) -> Any:
        class _Slow(litellm.CustomLLM):  # type: ignore[misc, name-defined]
            async def acompletion(
                self, model: str, messages: list[dict[str, str]], *args: Any, **kwargs: Any
            ) -> Any:
                tracker.enter()
                try:
                    await until(lambda: tracker.peak >= hold, f"{hold} calls in flight")
                    await asyncio.sleep(delay)  # a real network wait yields the loop
                finally:
                    tracker.leave()
                words = messages[-1]["content"].split()
                text = " ".join(["ok"] * (len(words) % 4 + 1))
                return litellm.ModelResponse(
                    model=model,
                    choices=[
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": text},
                        }
                    ],
                    usage={
                        "prompt_tokens": len(words),
                        "completion_tokens": len(text.split()),
                        "total_tokens": len(words) + len(text.split()),
                    },
                )

        return _Slow()

    return factory


def _gather(client: ProviderClient, model: str, n: int) -> Any:
    async def run() -> list[Completion]:
        prompts = [[{"role": "user", "content": " ".join(["w"] * (i + 1))}] for i in range(n)]
        return await asyncio.gather(*(client.complete(ModelSpec(model), p) for p in prompts))

    return run()


def test_max_workers_bounds_calls_in_flight(runner: LoopRunner) -> None:
    tracker = _InFlight()
    register_provider("slowfake", _slow_provider(tracker, 0.02, hold=3))
    client = ProviderClient(ClientSettings(max_workers=3, retry=FAST))
    results = runner.run(_gather(client, "slowfake/m", 30))
    assert tracker.total == 30 and tracker.now == 0
    assert tracker.peak == 3  # never above the limit, and the limit was actually used
    task = client.ledger.by_role["task"]
    assert task.calls == 30
    assert task.prompt_tokens == sum(r.prompt_tokens for r in results) == sum(range(1, 31))
    assert task.completion_tokens == sum(r.completion_tokens for r in results)


def test_ledger_totals_exact_with_fake_model_under_concurrency(runner: LoopRunner) -> None:
    FakeModel(lambda r: " ".join(["x"] * len(r.user))).install()
    client = ProviderClient(ClientSettings(max_workers=4, retry=FAST))
    results = runner.run(_gather(client, "fake/m", 40))
    assert [r.prompt_tokens for r in results] == list(range(1, 41))
    total = client.ledger.total()
    assert total.calls == 40
    assert total.prompt_tokens == sum(r.prompt_tokens for r in results)
    assert total.completion_tokens == sum(r.completion_tokens for r in results)


def test_client_survives_a_second_event_loop() -> None:
    # asyncio.run twice with one client: a semaphore bound to the first loop must not leak.
    tracker = _InFlight()
    register_provider("slowfake", _slow_provider(tracker, 0.005))
    client = ProviderClient(ClientSettings(max_workers=2, retry=FAST))
    first = asyncio.run(_gather(client, "slowfake/m", 6))
    second = asyncio.run(_gather(client, "slowfake/m", 6))
    assert len(first) == len(second) == 6 and tracker.peak <= 2
    assert client.ledger.by_role["task"].calls == 12


def test_fake_request_is_recorded_for_each_attempt(runner: LoopRunner, litellm: Any) -> None:
    fake = faulty(lambda n: rate_limit(litellm) if n == 1 else None)
    call(runner, ProviderClient(ClientSettings(retry=FAST)))
    assert [r.user for r in fake.requests] == ["say hi now", "say hi now"]
    assert all(isinstance(r, FakeRequest) for r in fake.requests)
