"""Hangs: a provider that trickles its answer gets a total deadline per call, then a retry.

The slow-drip provider is the local endpoint over real sockets on 127.0.0.1 (fault kind
``trickle``): headers at once, then one byte every ``drip`` seconds, so no single read ever
waits long enough for a per-read timeout. Before the total deadline a call waited for the whole
drip (here ~20 s; with a real provider, forever) and was never retried.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from test_faults import api_key
from test_offload import wait_ready

from reflex.models.client import ClientSettings, ModelSpec, ProviderClient
from reflex.models.offload import OffloadPool
from reflex.models.retry import RetryPolicy, error_name, is_transient
from reflex.models.runner import LoopRunner
from reflex.testing.endpoint import FaultPlan, serve

__all__ = ["api_key"]

FAST = RetryPolicy(max_retries=3, base_delay=0.001, max_delay=0.01)
# A long answer, so the drip (~400 bytes x 50 ms = ~20 s) outlasts the deadline several times.
QUESTION = [{"role": "user", "content": " ".join(["tell me a story"] * 12)}]
# The drip: one byte each 50 ms, far below any per-read timeout the call also has.
TRICKLE_ONCE = FaultPlan(script=["trickle"], drip=0.05)


class Retries:
    """The ``on_retry`` listener: what each retry was for."""

    def __init__(self) -> None:
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()

    def __call__(
        self, model: str, attempt: int, exc: BaseException, delay: float, role: str
    ) -> None:
        with self.lock:
            self.errors.append(exc)


@pytest.fixture(scope="module")
def runner() -> Iterator[LoopRunner]:
    loop = LoopRunner()
    yield loop
    loop.close()


def ask(runner: LoopRunner, url: str, timeout: float = 5.0, **client: Any) -> tuple[Any, Retries]:
    """One call with a total deadline of ``timeout``: 5 s leaves a busy machine room to answer
    the retry (a client process's first call imports and warms LiteLLM), yet is far below the
    ~20 s drip."""
    retries = Retries()
    provider = ProviderClient(ClientSettings(retry=FAST), on_retry=retries, **client)
    spec = ModelSpec("openai/slow", api_base=url, timeout=timeout, extra={"api_key": "sk-none"})
    return runner.run(provider.complete(spec, QUESTION)), retries


def test_a_trickling_answer_hits_the_total_deadline_and_is_retried(runner: LoopRunner) -> None:
    with serve(faults=TRICKLE_ONCE) as url:
        out, retries = ask(runner, url)
        stats = url.stats()
    assert out.text == QUESTION[0]["content"] and out.attempts == 2
    assert stats.faults == {"trickle": 1} and stats.completions == 1
    (error,) = retries.errors
    assert error_name(error) == "CallDeadlineExceeded" and is_transient(error)
    assert "5s" in str(error) and "whole body" in str(error)


def test_the_deadline_holds_through_client_processes(
    api_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # LiteLLM's full path: the lean transport (reflex.models.wire) keeps openai/ calls in the
    # run's process, and this test is about the calls a client process makes.
    monkeypatch.setenv("REFLEX_LEAN_TRANSPORT", "0")
    pool = wait_ready(OffloadPool(1))
    try:
        with serve(faults=TRICKLE_ONCE) as url:
            out, retries = ask(LoopRunner.shared(), url, offload=pool)
            stats = url.stats()
        assert pool.workers[0].served >= 1  # the calls went through the client process
    finally:
        pool.close()
    assert out.attempts == 2 and stats.faults == {"trickle": 1} and stats.completions == 1
    assert [error_name(e) for e in retries.errors] == ["CallDeadlineExceeded"]


def test_a_deadline_that_persists_fails_the_call_with_one_line(runner: LoopRunner) -> None:
    from reflex.errors import TransientProviderError

    plan = FaultPlan(script=["trickle"] * 4, drip=0.05)
    with serve(faults=plan) as url, pytest.raises(TransientProviderError) as caught:
        ask(runner, url, timeout=1.0)  # every attempt trickles: no answer to wait for
    message = str(caught.value)
    assert "still failing after 4 attempts" in message and "CallDeadlineExceeded" in message
    assert "\n" not in message
