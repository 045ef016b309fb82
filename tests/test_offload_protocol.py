"""The run <-> client-process wire (:mod:`reflex.models.offload_protocol`), on a socketpair."""

from __future__ import annotations

import pickle
import socket
import threading
from collections.abc import Iterator
from typing import ClassVar

import pytest

from reflex.models.offload_protocol import (
    RemoteError,
    describe,
    plain_messages,
    plain_spec,
    portable,
    receive,
    send,
)
from reflex.models.spec import ModelSpec


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair()
    yield left, right
    left.close()
    right.close()


def test_messages_arrive_in_order_under_their_call_ids(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    lock = threading.Lock()
    send(left, lock, 7, {"answer": "ok"})
    send(left, lock, 2**40, ["x" * 70_000])  # larger than one recv: read until whole
    assert receive(right) == (7, {"answer": "ok"})
    assert receive(right) == (2**40, ["x" * 70_000])


def test_end_of_stream_is_none_even_mid_message(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    left.sendall(b"\x00\x00\x00\x10" + b"\x00" * 8 + b"short")  # says 16 bytes, sends 5
    left.close()
    assert receive(right) is None


def test_a_body_that_does_not_unpickle_comes_back_as_its_calls_error(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    body = b"not a pickle"
    left.sendall(len(body).to_bytes(4, "big") + (3).to_bytes(8, "big") + body)
    rid, message = receive(right) or (None, None)
    assert rid == 3
    assert isinstance(message, Exception)


class _RateLimited(Exception):
    status_code = 429
    litellm_response_headers: ClassVar[dict[str, str]] = {"retry-after": "2.5"}


def test_describe_keeps_what_the_retry_policy_reads_through_pickle() -> None:
    remote = pickle.loads(pickle.dumps(describe(_RateLimited("slow down"))))
    assert isinstance(remote, RemoteError)
    assert remote.remote_classes[:2] == ("_RateLimited", "Exception")
    assert str(remote) == "slow down"
    assert remote.status_code == 429
    assert remote.litellm_response_headers == {"retry-after": "2.5"}


def test_describe_drops_a_status_code_that_is_not_an_int() -> None:
    class Odd(Exception):
        status_code = "429"

    remote = describe(Odd("x"))
    assert remote.status_code is None
    assert remote.litellm_response_headers is None


class _Text(str):
    pass


def test_portable_accepts_plain_values_only() -> None:
    assert portable({"stop": ["\n"], "n": 1, "t": (0.5, None), "ok": True})
    assert not portable({"stop": [_Text("\n")]})  # a str subclass may not unpickle there
    assert not portable({1: "x"})
    assert not portable([object()])


def test_plain_spec_and_messages_leave_no_str_subclass() -> None:
    spec = ModelSpec(_Text("openai/m"), api_base=_Text("http://127.0.0.1:1/v1"))
    plain = plain_spec(spec)
    assert type(plain.model) is str and type(plain.api_base) is str
    messages = plain_messages(
        [{"role": _Text("user"), "content": _Text("hi")}, {"role": "assistant", "content": None}]
    )
    assert messages == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}]
    assert all(type(v) is str for v in messages[0].values())
