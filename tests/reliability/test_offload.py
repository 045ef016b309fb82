"""Client processes (``client_processes``): LiteLLM calls run in worker processes, the rest not.

Over real HTTP to the local endpoint: the answers, usage and retries are those of an in-process
run, transient faults are retried by the run (which sees the original error classes), the
``max_workers`` limit still holds, in-process providers never leave the process, and a worker
that dies mid-call costs nothing but a retry.
"""

from __future__ import annotations

import asyncio
import pickle
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import HANG_POLLS, make_rows, until
from test_faults import START, TRANSIENT, answer, api_key, events, run_against, scores

from reflex import OptimizationResult, PromptOptimizer
from reflex.models.client import ClientSettings, ModelSpec, ProviderClient
from reflex.models.offload import OffloadPool
from reflex.models.offload_protocol import RemoteError
from reflex.models.retry import (
    error_name,
    first_line,
    is_rate_limit,
    is_transient,
    retry_after_seconds,
)
from reflex.models.runner import LoopRunner
from reflex.testing import FakeModel
from reflex.testing.endpoint import Endpoint, FaultPlan, serve


def wait_ready(pool: OffloadPool) -> OffloadPool:
    """Until every worker has imported LiteLLM (5-10 s on a loaded machine); a worker that exits
    fails at once, one that hangs after HANG_POLLS."""
    for _ in range(HANG_POLLS):
        if all(worker.ready for worker in pool.workers):
            return pool
        assert all(w.process.poll() is None for w in pool.workers), "a client process exited"
        time.sleep(0.01)
    pytest.fail("client processes never became ready")


@pytest.fixture(autouse=True)
def litellm_full_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests send ``openai/`` calls to client processes, which only LiteLLM's full path
    does: the lean transport (reflex.models.wire) keeps such calls in the run's process."""
    monkeypatch.setenv("REFLEX_LEAN_TRANSPORT", "0")


@pytest.fixture(scope="module")
def pool() -> Iterator[OffloadPool]:
    shared = wait_ready(OffloadPool.shared(2))
    yield shared
    shared.close()


__all__ = ["api_key"]  # the fixture, shared with test_faults


def run_offloaded(url: Endpoint, run_dir: Path) -> OptimizationResult:
    """``test_faults.run_against`` with two client processes."""
    return (
        PromptOptimizer()
        .set_dataset(make_rows(24))
        .add_provider("openai/task", api_base=url)
        .add_metric("exact_match")
        .set_reasoning_model("openai/reasoner", base_url=url)
        .configure(max_iterations=2, run_dir=str(run_dir), client_processes=2)
        .run(START)
    )


def served(pool: OffloadPool) -> int:
    return sum(worker.served for worker in pool.workers)


def test_remote_errors_keep_what_the_retry_policy_reads() -> None:
    error = RemoteError(["RateLimitError", "APIError", "Exception"], "slow down", 429, 2.5)
    copy = pickle.loads(pickle.dumps(error))
    for exc in (error, copy):
        assert is_rate_limit(exc) and is_transient(exc)
        assert retry_after_seconds(exc) == 2.5
        assert error_name(exc) == "RateLimitError"
        assert first_line(exc) == "RateLimitError: slow down"
    denied = RemoteError(["AuthenticationError", "Exception"], "bad key", 401)
    assert not is_transient(denied) and not is_rate_limit(denied)


def test_faulty_run_through_client_processes_matches_an_in_process_run(
    tmp_path: Path, api_key: str, pool: OffloadPool
) -> None:
    with serve(responder=answer) as clean_url:
        clean = run_against(clean_url, tmp_path / "clean")
    plan = FaultPlan(rate=0.3, kinds=TRANSIENT, seed=0, hang=0.2, max_per_request=3)
    before = served(pool)
    with serve(responder=answer, faults=plan) as url:
        offloaded = run_offloaded(url, tmp_path / "offloaded")
        stats = url.stats()
    assert served(pool) - before == stats.requests  # every attempt went through a worker
    assert scores(offloaded) == scores(clean)
    assert offloaded.usage["total"]["calls"] == clean.usage["total"]["calls"] == stats.completions
    assert offloaded.usage["total"]["retries"] == stats.fault_total >= 10
    kinds = {e["error"].split(":")[0] for e in events(offloaded) if e["type"] == "retry"}
    assert {"RateLimitError", "InternalServerError"} <= kinds, kinds


def test_max_workers_still_bounds_requests_in_flight(api_key: str, pool: OffloadPool) -> None:
    client = ProviderClient(ClientSettings(max_workers=3), offload=pool)
    gate = threading.Event()
    with serve(latency=0.05, gate=gate) as url:
        spec = ModelSpec("openai/task", api_base=url)

        async def many() -> list[str]:
            calls = [
                client.complete(spec, [{"role": "user", "content": f"q{i}"}]) for i in range(30)
            ]
            done = asyncio.ensure_future(asyncio.gather(*calls))
            # Answers are held until max_workers requests are in flight (so the limit is
            # reached, however slow the machine); from then on they flow.
            await until(lambda: url.stats().in_flight == 3, "3 requests in flight")
            gate.set()
            return [c.text for c in await done]

        before = served(pool)
        texts = LoopRunner.shared().run(many())
        assert texts == [f"q{i}" for i in range(30)]
        assert url.stats().peak_in_flight == 3 and served(pool) - before == 30
    assert client.ledger.total().calls == 30


def test_in_process_providers_stay_in_process(tmp_path: Path, pool: OffloadPool) -> None:
    FakeModel(lambda request: "positive").install()
    before = served(pool)
    result = (
        PromptOptimizer()
        .set_dataset([{"input": f"q{i}", "ideal": "positive"} for i in range(10)])
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .configure(max_iterations=0, run_dir=str(tmp_path), client_processes=2)
        .run("Label it.")
    )
    assert result.final is not None and result.final.mean_score == 1.0
    assert served(pool) == before


def test_a_worker_that_dies_mid_call_costs_a_retry(api_key: str) -> None:
    single = wait_ready(OffloadPool(1))
    client = ProviderClient(ClientSettings(max_workers=4), offload=single)
    gate = threading.Event()
    try:
        with serve(gate=gate) as url:
            spec = ModelSpec("openai/task", api_base=url)

            async def killed() -> list[str]:
                calls = [
                    client.complete(spec, [{"role": "user", "content": f"k{i}"}]) for i in range(4)
                ]
                tasks = [asyncio.ensure_future(c) for c in calls]
                # All four are in flight in the worker: sent, and held unanswered.
                await until(lambda: url.stats().in_flight == 4, "4 requests in flight")
                single.workers[0].process.kill()
                gate.set()  # the retries are answered
                return [c.text for c in await asyncio.gather(*tasks)]

            assert LoopRunner.shared().run(killed()) == [f"k{i}" for i in range(4)]
        assert client.ledger.total().retries == 4 and not single.ready()
    finally:
        single.close()


def test_an_in_process_call_ends_wire_slots_after_a_drain(api_key: str, pool: OffloadPool) -> None:
    """Calls in client processes hold slots there; the first call made here waits for them."""
    FakeModel(lambda request: "here").install()
    client = ProviderClient(ClientSettings(max_workers=4), offload=pool)
    gate = threading.Event()
    with serve(gate=gate) as url:
        remote = ModelSpec("openai/task", api_base=url)
        local = ModelSpec("fake/task")
        finished: list[str] = []

        async def mixed() -> list[str]:
            async def one(spec: ModelSpec, text: str) -> str:
                answer = (await client.complete(spec, [{"role": "user", "content": text}])).text
                finished.append(text)
                return answer

            first = [asyncio.ensure_future(one(remote, f"r{i}")) for i in range(8)]
            # Every remote call is admitted to the client processes (4 on the wire, held
            # there, and 4 waiting for a wire slot) before the local call is made ...
            await until(
                lambda: client.admission.wire_calls == 8 and url.stats().in_flight == 4,
                "8 remote calls admitted, 4 on the wire",
            )
            here = asyncio.ensure_future(one(local, "local"))
            # ... and the local call has ended the wire rule (it now waits for the drain)
            # before any remote call is answered.
            await until(lambda: not client.admission.wire, "the local call to end the wire rule")
            gate.set()
            rest = await asyncio.gather(*first)
            return [await here, *rest, await one(remote, "after")]

        answers = LoopRunner.shared().run(mixed())
        assert answers == ["here", *[f"r{i}" for i in range(8)], "after"]
        assert url.stats().peak_in_flight == 4
    # The local call waited until no remote call held a slot in a client process.
    assert finished.index("local") == 8 and not client.admission.wire


def test_no_process_starts_for_a_run_of_in_process_models() -> None:
    FakeModel(lambda request: "here").install()
    client = ProviderClient(
        ClientSettings(max_workers=2, processes=3)
    )  # 3: not the shared pool's size
    answer = LoopRunner.shared().run(
        client.complete(ModelSpec("fake/task"), [{"role": "user", "content": "q"}])
    )
    assert answer.text == "here" and client.offload is None and not client.admission.wire


def test_tools_formats_and_tool_call_turns_go_through_client_processes(
    api_key: str, pool: OffloadPool
) -> None:
    import json

    from reflex.testing.http import Request
    from reflex.toolcalls import ToolCall, render_answer

    tool = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}
    turns = [
        {"role": "user", "content": "time?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "noon"},
        {"role": "user", "content": "and now?"},
    ]
    called = render_answer("", [ToolCall("get_time", {})])
    captured: list[Request] = []
    client = ProviderClient(ClientSettings(max_workers=2), offload=pool)
    with serve(capture=captured, responder=lambda _: called) as url:
        spec = ModelSpec(
            "openai/task",
            api_base=url,
            tools=(tool,),
            tool_choice="required",
            response_format={"type": "json_object"},
        )
        before = served(pool)
        answer = LoopRunner.shared().run(client.complete(spec, turns))
        assert served(pool) - before == 1  # it went through a worker
    assert answer.text == called  # the answer's tool_calls, rendered canonically there
    body = json.loads(captured[0].body)
    assert body["tools"] == [tool] and body["tool_choice"] == "required"
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][1]["tool_calls"][0]["function"]["name"] == "get_time"
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "c", "content": "noon"}
