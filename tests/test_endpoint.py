"""Tests for reflex.testing.endpoint: the local OpenAI-compatible server, reached through LiteLLM
(``openai/<name>`` with ``api_base``) and ``ProviderClient``, and over raw sockets.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import until

from reflex.errors import TransientProviderError
from reflex.models.client import ClientSettings, Completion, ModelSpec, ProviderClient
from reflex.models.retry import RetryPolicy
from reflex.models.runner import LoopRunner
from reflex.testing.endpoint import FAULT_KINDS, ChatRequest, FaultPlan, Stats, serve

FAST = RetryPolicy(max_retries=4, base_delay=0.001, max_delay=0.01)
HI = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "say hi now"}]


@pytest.fixture(scope="module")
def runner() -> Iterator[LoopRunner]:
    loop = LoopRunner()
    yield loop
    loop.close()


def spec(url: str, model: str = "openai/local", timeout: float = 30.0) -> ModelSpec:
    return ModelSpec(model, api_base=url, timeout=timeout, extra={"api_key": "sk-none"})


def ask(
    runner: LoopRunner, client: ProviderClient, url: str, messages: Any = HI, **kw: Any
) -> Completion:
    return runner.run(client.complete(spec(url, **kw), messages))


def test_echoes_the_last_user_message_with_word_count_usage(runner: LoopRunner) -> None:
    with serve() as url:
        out = ask(runner, ProviderClient(), url)
        assert (out.text, out.prompt_tokens, out.completion_tokens) == ("say hi now", 5, 3)
        assert url.stats() == Stats(requests=1, completions=1, distinct=1, peak_in_flight=1)
        assert url.url.startswith("http://127.0.0.1:") and url.url.endswith("/v1")


def test_configured_usage_and_a_scripted_responder(runner: LoopRunner) -> None:
    def responder(request: ChatRequest) -> str:
        return f"{request.model}|{request.system}|{request.user.upper()}"

    with serve(responder=responder, usage=(1000, 7)) as url:
        out = ask(runner, ProviderClient(), url)
    assert out.text == "local|Be brief.|SAY HI NOW"
    assert (out.prompt_tokens, out.completion_tokens) == (1000, 7)


@pytest.mark.parametrize("kind", [k for k in FAULT_KINDS if k != "empty"])
def test_each_fault_is_served_once_and_retried(runner: LoopRunner, kind: str) -> None:
    plan = FaultPlan(script=[kind], retry_after=0.01, hang=5.0)
    with serve(faults=plan) as url:
        client = ProviderClient(ClientSettings(retry=FAST))
        out = ask(runner, client, url, timeout=0.5)
        stats = url.stats()
    assert out.text == "say hi now" and out.attempts == 2
    # Exactly one fault and one retry: LiteLLM's own SDK retries are off (no hidden calls).
    assert stats.faults == {kind: 1} and stats.requests == 2 and stats.completions == 1
    assert client.ledger.by_role["task"].retries == 1


def test_empty_content_is_an_answer_not_a_retry(runner: LoopRunner) -> None:
    with serve(faults=FaultPlan(script=["empty"])) as url:
        out = ask(runner, ProviderClient(ClientSettings(retry=FAST)), url)
        assert out.text == "" and url.stats().faults == {"empty": 1}


def test_a_fault_rate_is_survived_and_every_fault_counted(runner: LoopRunner) -> None:
    kinds = [k for k in FAULT_KINDS if k not in ("empty", "timeout")]
    plan = FaultPlan(rate=0.3, kinds=kinds, seed=0, retry_after=0.001, max_per_request=3)
    messages = [[{"role": "user", "content": f"row {i}"}] for i in range(60)]
    with serve(faults=plan) as url:
        client = ProviderClient(ClientSettings(max_workers=16, retry=FAST))

        async def run_all() -> list[Completion]:
            return list(await asyncio.gather(*(client.complete(spec(url), m) for m in messages)))

        outs = runner.run(run_all())
        stats = url.stats()
    assert [o.text for o in outs] == [f"row {i}" for i in range(60)]
    assert stats.completions == 60 and stats.distinct == 60
    assert stats.fault_total > 0 and stats.requests == 60 + stats.fault_total
    assert client.ledger.by_role["task"].retries == stats.fault_total
    assert stats.peak_in_flight <= 16


def test_a_429_makes_the_whole_run_back_off(runner: LoopRunner) -> None:
    # A is rate-limited (Retry-After 1 s) while B is answered; C, which starts after B, finds the
    # run paused and waits too, instead of hitting the provider during the back-off.
    plan = FaultPlan(script=["429-retry-after"], retry_after=1.0)
    messages = [[{"role": "user", "content": name}] for name in ("A", "B", "C")]
    with serve(latency=0.05, faults=plan) as url:
        client = ProviderClient(
            ClientSettings(max_workers=2, retry=RetryPolicy(max_retries=2, base_delay=5.0))
        )

        async def run_all() -> list[Completion]:
            return list(await asyncio.gather(*(client.complete(spec(url), m) for m in messages)))

        outs = runner.run(run_all())
        stats = url.stats()
    assert [o.text for o in outs] == ["A", "B", "C"]
    assert stats.requests == 4 and stats.faults == {"429-retry-after": 1}
    assert client.backoff_waits == 2  # A's own retry and C


def test_persistent_faults_exhaust_the_retries(runner: LoopRunner) -> None:
    with serve(faults=FaultPlan(rate=1.0, kinds=["503"])) as url:
        with pytest.raises(TransientProviderError, match="after 3 attempts"):
            ask(
                runner,
                ProviderClient(ClientSettings(retry=RetryPolicy(max_retries=2, base_delay=0.0))),
                url,
            )
        assert url.stats().faults == {"503": 3}


def test_fault_choice_is_deterministic_and_near_the_rate() -> None:
    plan = FaultPlan(rate=0.3, seed=7)
    draws = [plan.choose(f"d{i}", 0, 10**6) for i in range(2000)]
    assert draws == [plan.choose(f"d{i}", 0, 10**6) for i in range(2000)]
    assert 0.25 < sum(d is not None for d in draws) / 2000 < 0.35
    assert {d for d in draws if d is not None} == set(FAULT_KINDS)
    assert draws != [FaultPlan(rate=0.3, seed=8).choose(f"d{i}", 0, 10**6) for i in range(2000)]
    capped = FaultPlan(rate=1.0, kinds=["500"], max_per_request=2)
    assert [capped.choose("x", n, 10**6) for n in range(4)] == ["500", "500", None, None]
    assert FaultPlan(script=["429", None]).choose("x", 0, 1) is None


@pytest.mark.parametrize(
    "kwargs", [{"rate": 1.5}, {"rate": 0.1, "kinds": ["418"]}, {"script": ["nope"]}]
)
def test_bad_fault_plans_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="fault"):
        FaultPlan(**kwargs)


async def _raw_post(port: int, body: bytes, path: str = "/v1/chat/completions") -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    writer.write(head.encode() + body)
    await writer.drain()
    status = await reader.readline()
    length = 0
    while (line := await reader.readline()) != b"\r\n":
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    payload = await reader.readexactly(length)
    writer.close()
    return status + payload


def test_hundreds_of_concurrent_connections_are_all_answered() -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    gate = threading.Event()
    with serve(latency=0.05, gate=gate) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])

        async def burst() -> list[bytes]:
            posts = asyncio.gather(*(_raw_post(port, body) for _ in range(400)))
            # Every answer is held until all 400 requests are in: they are concurrent.
            await until(lambda: url.stats().in_flight == 400, "400 requests in flight")
            gate.set()
            return list(await posts)

        answers = asyncio.run(burst())
        stats = url.stats()
    assert all(a.startswith(b"HTTP/1.1 200") for a in answers)
    assert stats.requests == stats.completions == stats.peak_in_flight == 400


def test_bad_bodies_and_unknown_routes() -> None:
    with serve() as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        assert asyncio.run(_raw_post(port, b"{not json")).startswith(b"HTTP/1.1 400")
        assert asyncio.run(_raw_post(port, b"{}", "/v1/other")).startswith(b"HTTP/1.1 404")
        with urllib.request.urlopen(f"{url}/models") as response:
            assert json.load(response)["object"] == "list"


def test_runs_as_a_process_with_stats_over_http() -> None:
    command = [sys.executable, "-m", "reflex.testing.endpoint", "--port", "0", "--usage", "3", "4"]
    command += ["--fault-rate", "1.0", "--fault-kinds", "500", "--max-per-request", "1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split()[-1]
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "ping"}]})
        request = urllib.request.Request(f"{url}/chat/completions", data=body.encode())
        with pytest.raises(urllib.error.HTTPError, match="500"):
            urllib.request.urlopen(request)
        with urllib.request.urlopen(request) as response:
            answer = json.load(response)
        assert answer["choices"][0]["message"]["content"] == "ping"
        assert answer["usage"] == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
        with urllib.request.urlopen(f"{url}/stats") as response:
            stats = Stats.from_dict(json.load(response))
        assert (stats.requests, stats.completions, stats.faults) == (2, 1, {"500": 1})
    finally:
        process.terminate()
        process.wait(timeout=10)
