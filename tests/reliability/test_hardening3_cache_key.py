"""The cache key holds the endpoint a call really goes to (issue 29, item 1).

Two local endpoints answer differently: A always right, B always wrong. Two runs share one
cache (the run directory's sqlite file, a ``--cache-url`` sqlite file, a real Redis) and differ
only in ``OPENAI_BASE_URL``, which LiteLLM and the lean transport both honour. The second run
must call its own server and report that server's scores, not replay the first server's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from conftest import ANSWERS, make_rows

from reflex import PromptOptimizer
from reflex.models.client import ModelSpec, ProviderClient
from reflex.testing import FakeModel
from reflex.testing.endpoint import ChatRequest, Endpoint, serve


def right(request: ChatRequest) -> str:
    return ANSWERS.get(request.user, "unknown")


def wrong(request: ChatRequest) -> str:
    return "no idea"


@pytest.fixture
def servers() -> Iterator[tuple[Endpoint, Endpoint]]:
    with ExitStack() as stack:
        yield (
            stack.enter_context(serve(responder=right)),
            stack.enter_context(serve(responder=wrong)),
        )


def _score(tmp_path: Path, run_dir: str, cache_url: str | None) -> float:
    result = (
        PromptOptimizer()
        .set_dataset(make_rows(12))
        .add_provider("openai/served")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path / run_dir)
        .set_cache_url(cache_url)
        .configure(max_iterations=1, allow_degenerate_seed=True)
        .run("Classify the sentiment.")
    )
    assert result.baseline is not None
    return float(result.baseline.mean_score)


def _cache_url(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str | None:
    if kind == "run-dir":
        return None  # both runs use the same run directory, so its cache.sqlite
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'shared.sqlite'}"
    url = str(request.getfixturevalue("redis_url"))
    import redis

    redis.Redis.from_url(url).flushdb()
    return url


@pytest.mark.parametrize(
    "kind", ["run-dir", "sqlite", pytest.param("redis", marks=pytest.mark.services)]
)
def test_another_openai_base_url_is_another_server_in_the_cache(
    kind: str,
    servers: tuple[Endpoint, Endpoint],
    fake_model: FakeModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    a, b = servers
    url = _cache_url(kind, tmp_path, request)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", str(a))
    first = _score(tmp_path, "runs", url)
    assert first == pytest.approx(1.0) and a.stats().completions > 0
    monkeypatch.setenv("OPENAI_BASE_URL", str(b))
    second = _score(tmp_path, "runs" if kind == "run-dir" else "other", url)
    assert b.stats().completions > 0  # the second run called its own server
    assert second == pytest.approx(0.0)  # and reports that server's scores
    # Back on A: its answers are still in the cache, not paid again.
    paid = a.stats().completions
    monkeypatch.setenv("OPENAI_BASE_URL", str(a))
    assert _score(tmp_path, "runs", url) == pytest.approx(1.0)
    assert a.stats().completions == paid


def test_the_key_follows_every_setting_that_picks_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "HOSTED_VLLM_API_BASE", "GROQ_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    client = ProviderClient()
    messages = [{"role": "user", "content": "hi"}]

    def key(model: str, api_base: str | None = None) -> str:
        return client.key(ModelSpec(model=model, api_base=api_base), messages)

    plain = key("openai/m")
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:1/v1")
    by_api_base = key("openai/m")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:2/v1")  # LiteLLM reads it first
    by_base_url = key("openai/m")
    assert len({plain, by_api_base, by_base_url}) == 3
    # An explicit --api-base wins over both, as in LiteLLM: the variables do not change its key.
    explicit = key("openai/m", "http://127.0.0.1:3/v1")
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert key("openai/m", "http://127.0.0.1:3/v1") == explicit
    monkeypatch.setenv("HOSTED_VLLM_API_BASE", "http://127.0.0.1:4/v1")
    vllm = key("hosted_vllm/m")
    monkeypatch.setenv("HOSTED_VLLM_API_BASE", "http://127.0.0.1:5/v1")
    assert key("hosted_vllm/m") != vllm
    groq = key("groq/m")
    monkeypatch.setenv("GROQ_API_BASE", "http://127.0.0.1:6/v1")
    assert key("groq/m") != groq


def test_the_lean_transport_sends_where_the_key_says(
    servers: tuple[Endpoint, Endpoint], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route and the key come from one resolution: same server, same key; else not."""
    from reflex.models.client import load_litellm
    from reflex.models.wire import lean_route

    a, b = servers
    litellm, client = load_litellm(), ProviderClient()
    messages = [{"role": "user", "content": "hi"}]
    spec = ModelSpec(model="openai/served")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    seen: dict[str, set[str]] = {}
    for base_url, api_base in ((a, None), (a, b), (b, None), (None, b), (None, a)):
        for name, value in (("OPENAI_BASE_URL", base_url), ("OPENAI_API_BASE", api_base)):
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, str(value))
        route = lean_route(litellm, spec)
        assert route is not None
        seen.setdefault(route.url, set()).add(client.key(spec, messages))
    assert len(seen) == 2 and all(len(keys) == 1 for keys in seen.values())
    assert seen[str(a) + "/chat/completions"] != seen[str(b) + "/chat/completions"]
