"""Client processes seen from the run (reflex.models.offload): the pool's calls to real worker
processes over the local endpoint, the environment sent before a call, a deadline's cancel, a
worker that dies, the shared pool and the slots' shares. (Whole runs through client processes:
tests/reliability/test_offload.py.)"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from conftest import HANG_POLLS, until

from reflex.models.deadline import CallDeadlineExceeded
from reflex.models.litellm_call import Completion
from reflex.models.offload import OffloadPool, share
from reflex.models.offload_protocol import RemoteError, portable
from reflex.models.runner import LoopRunner
from reflex.models.spec import ModelSpec
from reflex.testing.endpoint import serve
from reflex.testing.http import Request

MESSAGES = [{"role": "user", "content": "hello pool"}]


def wait_ready(pool: OffloadPool) -> OffloadPool:
    """Until its workers have imported LiteLLM; one that exits or hangs fails the test."""

    async def ready() -> None:
        await until(lambda: pool.ready() or not pool.alive(), "a client process ready")

    LoopRunner.shared().run(ready())
    assert pool.ready(), "a client process exited"
    return pool


@pytest.fixture(scope="module")
def pool() -> Iterator[OffloadPool]:
    own = wait_ready(OffloadPool(1))  # the module's own: the shared pool stays as it is
    yield own
    own.close()


def keyed(url: str) -> ModelSpec:
    return ModelSpec("openai/m", api_base=url, extra={"api_key": "sk-none"})


def test_the_shares_of_slots_sum_to_the_slots() -> None:
    assert [share(5, 2, i) for i in range(2)] == [3, 2]
    assert [share(1, 3, i) for i in range(3)] == [1, 0, 0]  # a worker may get none
    assert all(sum(share(s, w, i) for i in range(w)) == s for s in range(9) for w in (1, 2, 4))


def test_a_pool_needs_a_process() -> None:
    with pytest.raises(ValueError, match="client processes must be >= 1, got 0"):
        OffloadPool(0)


def test_only_plain_decoding_options_leave_the_process() -> None:
    assert portable({"api_key": "sk", "stop": ["\n"], "n": 1, "extra": {"a": [1.5, None]}})
    assert not portable({"callback": print})
    assert OffloadPool.portable(ModelSpec("openai/x", extra={"response_format": {"type": "x"}}))
    assert not OffloadPool.portable(ModelSpec("openai/x", extra={"client": object()}))


def test_a_call_runs_in_a_worker(pool: OffloadPool) -> None:
    before = pool.workers[0].served
    with serve(usage=(9, 2)) as url:
        done = LoopRunner.shared().run(pool.call(keyed(url), MESSAGES, 2, gate=(1, 4)))
    assert isinstance(done, Completion) and done.attempts == 2
    assert (done.text, done.prompt_tokens, done.completion_tokens) == ("hello pool", 9, 2)
    assert pool.workers[0].served == before + 1 and pool.ready() and pool.alive()


def test_an_environment_change_reaches_the_worker_before_the_next_call(
    pool: OffloadPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    captured: list[Request] = []
    monkeypatch.setenv("OPENAI_API_KEY", "sk-set-after-start")
    with serve(capture=captured) as url:
        spec = ModelSpec("openai/m", api_base=url)  # no key of its own: the environment's
        assert LoopRunner.shared().run(pool.call(spec, MESSAGES, 1)).text == "hello pool"
    assert captured[0].headers["authorization"] == "Bearer sk-set-after-start"


def test_a_call_past_its_deadline_is_cancelled_in_the_worker_too(pool: OffloadPool) -> None:
    held = threading.Event()
    captured: list[Request] = []
    worker = pool.workers[0]
    before = worker.served
    with serve(gate=held, capture=captured) as url:

        async def late_then_next() -> Completion:
            with pytest.raises(CallDeadlineExceeded):
                await pool.call(keyed(url), MESSAGES, 1, deadline=0.2)
            assert worker.pending == {}  # the run gave up on it
            following = asyncio.ensure_future(
                pool.call(keyed(url), [{"role": "user", "content": "next"}], 1)
            )
            # The next request reached the endpoint: the worker read the cancel before it.
            await until(lambda: any(b"next" in r.body for r in captured), "the next request")
            held.set()
            await following
            # A round trip after both were released: an answer to the first would be in by now.
            return await pool.call(keyed(url), [{"role": "user", "content": "last"}], 1)

        assert LoopRunner.shared().run(late_then_next()).text == "last"
    assert worker.served == before + 2  # the cancelled call was never answered


def test_a_worker_that_dies_fails_its_calls_as_connection_errors() -> None:
    single = wait_ready(OffloadPool(1))
    held = threading.Event()
    try:
        with serve(gate=held) as url:

            async def killed() -> None:
                call = asyncio.ensure_future(single.call(keyed(url), MESSAGES, 1))
                await until(lambda: url.stats().in_flight == 1, "the call on the wire")
                single.workers[0].process.kill()
                with pytest.raises(RemoteError, match="exited during the call") as lost:
                    await asyncio.wait_for(call, HANG_POLLS / 100)  # settled, never left hanging
                assert "APIConnectionError" in lost.value.remote_classes  # retried elsewhere
                await until(lambda: not single.alive(), "the worker seen gone")
                with pytest.raises(RemoteError, match="no client process is running"):
                    await single.call(keyed(url), MESSAGES, 1)

            LoopRunner.shared().run(killed())
            held.set()
        assert not single.ready()
    finally:
        single.close()


def test_the_shared_pool_is_kept_per_size_and_forgotten_when_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(OffloadPool, "_shared", None)  # whatever another test left is restored
    shared = OffloadPool.shared(1)
    try:
        assert OffloadPool.shared(1) is shared and len(shared.workers) == 1
    finally:
        shared.close()
    assert OffloadPool._shared is None
    assert all(worker.process.poll() is not None for worker in shared.workers)
