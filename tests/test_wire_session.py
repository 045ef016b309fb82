"""The lean transport's HTTP sessions and proxy (:mod:`reflex.models.wire_session`)."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from reflex.models.runner import LoopRunner
from reflex.models.wire_session import env_proxy, session

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")


@pytest.fixture(autouse=True)
def _no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_the_proxy_and_its_credentials_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://user:pa%40ss@127.0.0.1:3128")
    proxy, auth = env_proxy("https://api.example.com/v1/chat/completions")
    assert proxy == "http://127.0.0.1:3128"  # the credentials are not left in the URL
    assert auth is not None and (auth.login, auth.password) == ("user", "pa@ss")
    assert env_proxy("http://api.example.com/v1") == (None, None)  # HTTP_PROXY is unset


def test_no_proxy_and_a_non_http_proxy_mean_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    assert env_proxy("http://internal.example/v1") == (None, None)
    assert env_proxy("http://other.example/v1") == ("http://127.0.0.1:3128", None)
    monkeypatch.setenv("HTTP_PROXY", "socks5://127.0.0.1:1080")  # aiohttp would skip it
    assert env_proxy("http://other.example/v1") == (None, None)


def test_a_session_never_trusts_the_environment_and_a_foreign_loop_gets_its_own() -> None:
    async def two() -> tuple[aiohttp.ClientSession, aiohttp.ClientSession]:
        async with session() as first:
            assert not first.closed and first.trust_env is False
        async with session() as second:
            pass
        return first, second

    first, second = asyncio.run(two())
    assert first is not second
    assert first.closed and second.closed  # an own session closes with its block


def test_the_run_loop_keeps_one_session_until_it_closes() -> None:
    runner = LoopRunner.shared()

    async def one() -> aiohttp.ClientSession:
        async with session() as shared:
            return shared

    first, second = runner.run(one()), runner.run(one())
    assert first is second and not first.closed
