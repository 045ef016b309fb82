"""A client process (reflex.models.offload_worker), spoken to as the run speaks to it: a real
child interpreter on a socketpair, its LiteLLM calls over HTTP to the local endpoint."""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import HANG_POLLS

import reflex
from reflex.models.litellm_call import Completion
from reflex.models.offload_protocol import RemoteError, plain_messages, plain_spec, receive, send
from reflex.models.spec import ModelSpec
from reflex.testing.endpoint import FaultPlan, serve
from reflex.testing.http import Request

LIMIT = 8 * 2**20  # --max-response-mb 8, in bytes


class Worker:
    """One client process as the run starts it (reflex.models.offload._Worker), by hand."""

    def __init__(self) -> None:
        self.sock, child = socket.socketpair()
        self.sock.settimeout(HANG_POLLS / 100)  # a hung worker fails the test, never hangs it
        home = str(Path(reflex.__file__).resolve().parents[1])
        code = f"import sys; sys.path.insert(0, {home!r}); "
        code += "from reflex.models.offload_worker import entry; entry()"
        # LiteLLM's full path: the lean transport never runs in a client process.
        env = {**os.environ, "REFLEX_LEAN_TRANSPORT": "0"}
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, str(child.fileno())],
            pass_fds=[child.fileno()],
            stdin=subprocess.DEVNULL,
            env=env,
        )
        child.close()
        self.lock = threading.Lock()
        assert receive(self.sock) == (0, ("ready", None)), "the worker never said ready"

    def send(self, rid: int, message: object) -> None:
        send(self.sock, self.lock, rid, message)

    def call(self, rid: int, spec: ModelSpec, gate: tuple[int, int] | None = None) -> None:
        messages = plain_messages([{"role": "user", "content": f"question {rid}"}])
        self.send(rid, ("call", plain_spec(spec), messages, 1, gate, LIMIT))

    def answers(self, n: int) -> dict[int, tuple[str, object]]:
        """The next ``n`` answers, by call id."""
        found: dict[int, tuple[str, object]] = {}
        for _ in range(n):
            received = receive(self.sock)
            assert received is not None, "the worker went away (or hung)"
            rid, message = received
            assert isinstance(message, tuple)
            found[rid] = message
        return found

    def close(self) -> tuple[int, list[int]]:
        """End of stream: the worker stops. Its exit code, and the call ids it still answered."""
        self.sock.shutdown(socket.SHUT_WR)
        late = []
        while (received := receive(self.sock)) is not None:
            late.append(received[0])
        code = self.process.wait(timeout=HANG_POLLS / 100)
        self.sock.close()
        return code, late


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    started = Worker()
    yield started
    assert started.close() == (0, [])


def spec_for(url: str, **extra: object) -> ModelSpec:
    return ModelSpec("openai/m", api_base=url, extra={"api_key": "sk-none", **extra})


def test_a_call_is_answered_with_the_completion(worker: Worker) -> None:
    with serve(usage=(40, 3)) as url:
        worker.call(11, spec_for(url))
        [(rid, (status, done))] = worker.answers(1).items()
    assert (rid, status) == (11, "ok") and isinstance(done, Completion)
    assert (done.text, done.prompt_tokens, done.completion_tokens) == ("question 11", 40, 3)


def test_a_provider_error_comes_back_with_what_the_retry_policy_reads(worker: Worker) -> None:
    with serve(faults=FaultPlan(script=["429-retry-after"])) as url:
        worker.call(12, spec_for(url), gate=(5, 2))
        [(status, error)] = worker.answers(1).values()
    assert status == "error" and isinstance(error, RemoteError)
    assert "RateLimitError" in error.remote_classes and error.status_code == 429
    assert error.litellm_response_headers is not None  # its Retry-After, for the back-off


def test_an_unreadable_message_is_an_error_for_its_call_only(worker: Worker) -> None:
    body = b"not a pickle"
    with worker.lock:  # the wire's header (length, call id), then a body that does not unpickle
        worker.sock.sendall(len(body).to_bytes(4, "big") + (13).to_bytes(8, "big") + body)
    [(rid, (status, error))] = worker.answers(1).items()
    assert (rid, status) == (13, "error") and isinstance(error, RemoteError)
    assert pickle.loads(pickle.dumps(error)).remote_classes == error.remote_classes
    with serve() as url:  # the worker still serves
        worker.call(14, spec_for(url))
        assert worker.answers(1)[14][0] == "ok"


def test_the_runs_environment_reaches_the_worker(worker: Worker) -> None:
    captured: list[Request] = []
    with serve(capture=captured) as url:
        environment = {**os.environ, "REFLEX_LEAN_TRANSPORT": "0"}
        worker.send(0, ("env", {**environment, "OPENAI_API_KEY": "sk-set-later"}))
        worker.call(15, ModelSpec("openai/m", api_base=url))  # no key of its own
        assert worker.answers(1)[15][0] == "ok"
    assert captured[0].headers["authorization"] == "Bearer sk-set-later"


def test_a_gated_call_holds_one_of_its_slots_on_the_wire(worker: Worker) -> None:
    with serve(latency=0.05) as url:
        spec = spec_for(url)
        worker.call(20, spec, gate=(9, 1))  # the first: a slot for the whole call (a probe)
        assert worker.answers(1)[20][0] == "ok"
        for rid in (21, 22, 23):  # trusted now: the slot is held on the wire only
            worker.call(rid, spec, gate=(9, 1))
        statuses = {rid: status for rid, (status, _) in worker.answers(3).items()}
        peak = url.stats().peak_in_flight
    assert statuses == {21: "ok", 22: "ok", 23: "ok"}
    assert peak == 1  # one slot: never two of that run's requests on the wire at once


def until(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` every 10 ms (a hung worker fails after HANG_POLLS)."""
    for _ in range(HANG_POLLS):
        if condition():
            return
        time.sleep(0.01)
    pytest.fail(f"never happened: {what}")


def test_ungated_calls_are_all_on_the_wire_together(worker: Worker) -> None:
    held = threading.Event()
    with serve(gate=held) as url:
        for rid in (31, 32, 33):
            worker.call(rid, spec_for(url))
        until(lambda: url.stats().requests == 3, "three requests on the wire")
        held.set()
        assert url.stats().peak_in_flight == 3
        answered = {rid: status for rid, (status, _) in worker.answers(3).items()}
    assert answered == {31: "ok", 32: "ok", 33: "ok"}  # none waited out its timeout for a slot


def test_a_cancelled_call_is_never_answered_and_the_worker_exits_at_end_of_stream() -> None:
    worker = Worker()
    held = threading.Event()
    captured: list[Request] = []
    with serve(gate=held, capture=captured) as url:
        worker.call(41, spec_for(url))
        until(lambda: len(captured) == 1, "call 41 on the wire")
        worker.send(41, ("cancel",))
        worker.call(42, spec_for(url))
        until(lambda: len(captured) == 2, "call 42 on the wire")  # the cancel was read first
        held.set()
        answered = worker.answers(1)
    assert list(answered) == [42] and answered[42][0] == "ok"
    assert worker.close() == (0, [])  # 41 is never answered; the worker exits cleanly
