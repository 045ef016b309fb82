"""Tests for reflex.models.cache: key stability, sqlite persistence, and cache behaviour inside
ProviderClient with real LiteLLM calls against the fake model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reflex.errors import ProviderError, TransientProviderError
from reflex.models.cache import CachedResponse, ResponseCache, cache_key
from reflex.models.client import ClientSettings, Completion, ModelSpec, ProviderClient
from reflex.models.retry import RetryPolicy
from reflex.models.runner import LoopRunner
from reflex.testing import FakeModel

FAST = RetryPolicy(max_retries=2, base_delay=0.0)
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi there"}]
PARAMS = {"temperature": 0.0, "seed": 0}


@pytest.fixture
def fake() -> FakeModel:
    return FakeModel(lambda r: f"answer to {r.user}").install()


def call(
    runner: LoopRunner,
    client: ProviderClient,
    spec: ModelSpec | None = None,
    messages: list[dict[str, str]] = MESSAGES,
) -> Completion:
    return runner.run(client.complete(spec or ModelSpec("fake/m"), messages))


# --- cache_key -----------------------------------------------------------------------------


def test_cache_key_is_stable_across_versions() -> None:
    # Pinned: a change here silently invalidates every user's on-disk cache.
    key = cache_key("default", "fake/m", PARAMS, [{"role": "user", "content": "hi"}])
    assert key == "1cc6f70fab44361fef3eb92ef94504029bc40f00885373fb708fba9778ceeeaf"


def test_cache_key_ignores_param_order_but_not_values() -> None:
    base = cache_key("ns", "fake/m", {"a": 1, "b": 2}, MESSAGES)
    assert base == cache_key("ns", "fake/m", {"b": 2, "a": 1}, MESSAGES)
    assert base == cache_key("ns", "fake/m", {"a": 1, "b": 2}, tuple(MESSAGES))
    assert len(base) == 64 and int(base, 16) >= 0
    variants = [
        cache_key("other", "fake/m", {"a": 1, "b": 2}, MESSAGES),
        cache_key("ns", "fake/n", {"a": 1, "b": 2}, MESSAGES),
        cache_key("ns", "fake/m", {"a": 1, "b": 3}, MESSAGES),
        cache_key("ns", "fake/m", {"a": 1, "b": 2}, MESSAGES[1:]),
        cache_key("ns", "fake/m", {"a": 1, "b": 2}, list(reversed(MESSAGES))),
        cache_key("ns", "fake/m", {"a": 1, "b": 2, "c": None}, MESSAGES),
    ]
    assert len({base, *variants}) == len(variants) + 1


def test_cache_key_handles_non_ascii_text() -> None:
    one = cache_key("ns", "fake/m", {}, [{"role": "user", "content": "café ☕"}])
    two = cache_key("ns", "fake/m", {}, [{"role": "user", "content": "cafe ☕"}])
    assert one != two


# --- ResponseCache -------------------------------------------------------------------------


def test_put_get_roundtrip_and_miss() -> None:
    cache = ResponseCache(None)
    assert cache.get("nope") is None and len(cache) == 0
    cache.put("k", CachedResponse("text", 3, 4, None))
    cache.put("p", CachedResponse("priced", 1, 1, 0.25))
    assert cache.get("k") == CachedResponse("text", 3, 4, None)
    assert cache.get("p") == CachedResponse("priced", 1, 1, 0.25)
    cache.put("k", CachedResponse("newer", 1, 2, 0.5))
    assert cache.get("k") == CachedResponse("newer", 1, 2, 0.5) and len(cache) == 2
    cache.close()


def test_sqlite_cache_persists_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "run" / "nested" / "cache.sqlite"
    first = ResponseCache(path)
    first.put("k", CachedResponse("kept", 5, 6, 0.125))
    first.close()
    assert path.exists()
    reopened = ResponseCache(path)
    assert reopened.get("k") == CachedResponse("kept", 5, 6, 0.125) and len(reopened) == 1
    reopened.close()
    as_string = ResponseCache(str(path))
    assert as_string.get("k") is not None
    as_string.close()


# --- ProviderClient + cache ----------------------------------------------------------------


def test_second_identical_call_is_a_cache_hit(runner: LoopRunner, fake: FakeModel) -> None:
    client = ProviderClient(ClientSettings(retry=FAST), cache=ResponseCache(None))
    first = call(runner, client)
    second = call(runner, client)
    assert len(fake.requests) == 1
    assert first.cached is False and second.cached is True and second.attempts == 0
    assert second.text == first.text == "answer to hi there"
    assert (
        (second.prompt_tokens, second.completion_tokens)
        == (first.prompt_tokens, first.completion_tokens)
        == (4, 4)
    )
    task = client.ledger.by_role["task"]
    assert (task.calls, task.cache_hits) == (1, 1)
    assert task.tokens == 8  # a hit costs nothing new


def test_cache_hit_keeps_the_original_cost(
    runner: LoopRunner, fake: FakeModel, litellm: Any
) -> None:
    name = "fake/reflex-cache-priced"
    litellm.register_model(
        {
            name: {
                "input_cost_per_token": 0.01,
                "output_cost_per_token": 0.02,
                "litellm_provider": "fake",
                "mode": "chat",
            }
        }
    )
    try:
        client = ProviderClient(ClientSettings(retry=FAST), cache=ResponseCache(None))
        first = call(runner, client, ModelSpec(name))
        second = call(runner, client, ModelSpec(name))
    finally:
        litellm.model_cost.pop(name, None)
    assert first.cost == pytest.approx(4 * 0.01 + 4 * 0.02)
    assert second.cached and second.cost == first.cost
    assert client.ledger.by_role["task"].cost == pytest.approx(first.cost)
    # Saved, not spent: the hit is recorded at the original call's cost apart from ``cost``.
    assert client.ledger.by_role["task"].cached_cost == pytest.approx(first.cost)
    assert client.ledger.total().cached_cost == pytest.approx(first.cost)


@pytest.mark.parametrize(
    ("spec", "messages", "namespace"),
    [
        (ModelSpec("fake/m", temperature=0.7), MESSAGES, "default"),
        (ModelSpec("fake/other"), MESSAGES, "default"),
        (ModelSpec("fake/m", seed=1), MESSAGES, "default"),
        (ModelSpec("fake/m", max_tokens=10), MESSAGES, "default"),
        (ModelSpec("fake/m", extra={"top_p": 0.5}), MESSAGES, "default"),
        (ModelSpec("fake/m"), [{"role": "system", "content": "Be long."}, MESSAGES[1]], "default"),
        (ModelSpec("fake/m"), [MESSAGES[0], {"role": "user", "content": "bye"}], "default"),
        (ModelSpec("fake/m"), MESSAGES, "another-run"),
    ],
)
def test_any_difference_misses(
    runner: LoopRunner,
    fake: FakeModel,
    spec: ModelSpec,
    messages: list[dict[str, str]],
    namespace: str,
) -> None:
    cache = ResponseCache(None)
    call(runner, ProviderClient(ClientSettings(retry=FAST), cache=cache))
    client = ProviderClient(ClientSettings(cache_namespace=namespace, retry=FAST), cache=cache)
    out = call(runner, client, spec, messages)
    assert out.cached is False and len(fake.requests) == 2 and len(cache) == 2
    assert client.ledger.by_role["task"].cache_hits == 0


def test_timeout_is_not_part_of_the_key(runner: LoopRunner, fake: FakeModel) -> None:
    client = ProviderClient(ClientSettings(retry=FAST), cache=ResponseCache(None))
    call(runner, client, ModelSpec("fake/m", timeout=120.0))
    assert call(runner, client, ModelSpec("fake/m", timeout=5.0)).cached is True


def test_transient_failures_are_never_cached(runner: LoopRunner, litellm: Any) -> None:
    failing = True

    def fault(request: Any, number: int) -> BaseException | None:
        if failing:
            return litellm.RateLimitError(message="slow", llm_provider="openai", model="m")
        return None

    fake = FakeModel(lambda r: "fresh", fault=fault).install()
    cache = ResponseCache(None)
    client = ProviderClient(ClientSettings(retry=FAST), cache=cache)
    with pytest.raises(TransientProviderError):
        call(runner, client)
    assert len(cache) == 0 and len(fake.requests) == 3
    failing = False
    out = call(runner, client)
    assert out.text == "fresh" and out.cached is False and len(fake.requests) == 4
    assert call(runner, client).cached is True and len(cache) == 1


def test_a_call_that_recovered_after_retries_is_cached_once(
    runner: LoopRunner, litellm: Any
) -> None:
    fake = FakeModel(
        lambda r: "ok",
        fault=lambda r, n: (
            litellm.InternalServerError(
                message="Connection error.", llm_provider="openai", model="m"
            )
            if n == 1
            else None
        ),
    )
    fake.install()
    cache = ResponseCache(None)
    client = ProviderClient(ClientSettings(retry=FAST), cache=cache)
    assert call(runner, client).attempts == 2
    assert call(runner, client).cached is True
    assert len(fake.requests) == 2 and len(cache) == 1


def test_permanent_failures_are_not_cached(runner: LoopRunner, litellm: Any) -> None:
    fake = FakeModel(
        fault=lambda r, n: litellm.AuthenticationError(
            message="bad key", llm_provider="openai", model="m"
        )
    ).install()
    cache = ResponseCache(None)
    client = ProviderClient(ClientSettings(retry=FAST), cache=cache)
    for _ in range(2):
        with pytest.raises(ProviderError):
            call(runner, client)
    assert len(cache) == 0 and len(fake.requests) == 2


def test_on_disk_cache_serves_a_new_client_after_reopen(
    runner: LoopRunner, fake: FakeModel, tmp_path: Path
) -> None:
    path = tmp_path / "cache.sqlite"
    first_cache = ResponseCache(path)
    first = call(runner, ProviderClient(ClientSettings(retry=FAST), cache=first_cache))
    first_cache.close()

    reopened = ResponseCache(path)
    client = ProviderClient(ClientSettings(retry=FAST), cache=reopened)
    again = call(runner, client)
    reopened.close()
    assert len(fake.requests) == 1
    assert again.cached is True and again.text == first.text
    assert (again.prompt_tokens, again.completion_tokens) == (
        first.prompt_tokens,
        first.completion_tokens,
    )
    assert client.ledger.by_role["task"].cache_hits == 1
    assert client.ledger.by_role["task"].calls == 0
