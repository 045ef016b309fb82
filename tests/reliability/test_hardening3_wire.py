"""The model channel's answers, on both transports (issue 29, items 4, 6, 10 and 11).

A ``~/.netrc`` ``default`` entry made aiohttp add basic auth next to the provider's key, and
every lean call failed as "set the provider's API key" (item 4). Answers were read whole, so a
100 MB body cost the run its memory (item 6). A malformed ``usage`` on the lean transport was a
permanent error blaming the model name, negative or absurd token counts were accepted on both
(-29,000,145 tokens in a result, 10**30 overflowed the cache), a 200 with ``{"error": ...}`` lost
the provider's message and ``choices: []`` was "list index out of range" (items 10, 11).
Each test runs the lean transport and LiteLLM's path (``REFLEX_LEAN_TRANSPORT=0``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows

from reflex.cli import main
from reflex.errors import ProviderError, TransientProviderError
from reflex.models import litellm_call
from reflex.models.cache import ResponseCache
from reflex.models.client import ClientSettings, ProviderClient, load_litellm
from reflex.models.litellm_call import call_once
from reflex.models.retry import RetryPolicy
from reflex.models.runner import LoopRunner
from reflex.models.spec import ModelSpec
from reflex.testing.endpoint import FaultPlan, Reply, serve
from reflex.testing.http import Request

MESSAGES = [{"role": "user", "content": "hello there"}]
MODELS = ("openai/gpt-4o-mini", "hosted_vllm/qwen")
FAST = RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.01, max_retries_with_progress=1)


@pytest.fixture(autouse=True)
def no_litellm_callbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """No LiteLLM callback (one left by an earlier test sends every call through LiteLLM)."""
    litellm = load_litellm()
    for name in litellm_call._LITELLM_CALLBACK_LISTS:
        monkeypatch.setattr(litellm, name, [])


def transports(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for lean in ("1", "0"):
        monkeypatch.setenv("REFLEX_LEAN_TRANSPORT", lean)
        yield "lean" if lean == "1" else "litellm"


# --- item 4: ~/.netrc ------------------------------------------------------------------------


def test_a_netrc_default_entry_never_replaces_the_key_and_proxies_still_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner: LoopRunner
) -> None:
    netrc = tmp_path / ".netrc"
    netrc.write_text("default login someone password hunter2\n", encoding="utf-8")
    netrc.chmod(0o600)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.setenv("REFLEX_LEAN_TRANSPORT", "1")
    captured: list[Request] = []
    litellm = load_litellm()
    # The provider is never reached directly: HTTP_PROXY sends the request through the
    # "proxy" (a second endpoint, which serves the absolute-URL request it gets).
    with serve() as provider, serve(capture=captured) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url.removesuffix("/v1"))
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        for model in MODELS:
            spec = ModelSpec(model, api_base=provider, extra={"api_key": "sk-explicit"})
            answer = runner.run(call_once(litellm, spec, MESSAGES, 1))
            assert answer.text == "hello there"
        assert provider.stats().requests == 0 and proxy.stats().requests == 2
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # and NO_PROXY is honoured
        answer = runner.run(call_once(litellm, spec, MESSAGES, 1))
        assert answer.text == "hello there" and provider.stats().requests == 1
    assert [r.headers.get("authorization") for r in captured] == ["Bearer sk-explicit"] * 2
    assert all("proxy-authorization" not in r.headers for r in captured)


# --- item 6: response size -------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS)
def test_an_oversize_answer_fails_at_once_naming_the_cap_and_the_option(
    model: str, monkeypatch: pytest.MonkeyPatch, runner: LoopRunner
) -> None:
    for transport in transports(monkeypatch):
        # 3 MiB answers, streamed with no Content-Length: the count, not the header, stops it.
        with serve(faults=FaultPlan(script=["huge", "huge", "huge"], huge_mb=3)) as url:
            spec = ModelSpec(model, api_base=url, extra={"api_key": "sk-x"})
            client = ProviderClient(ClientSettings(retry=FAST, max_response_mb=1))
            with pytest.raises(ProviderError) as failed:
                runner.run(client.complete(spec, MESSAGES))
            line = str(failed.value)
            assert "permanent provider error, not retried: ResponseTooLarge" in line, transport
            assert "answer of more than 1 MB" in line and "--max-response-mb" in line, line
            assert "\n" not in line and url.stats().requests == 1, transport  # not retried
            raised = ProviderClient(
                ClientSettings(retry=FAST, max_response_mb=4)
            )  # the option raises it
            answer = runner.run(raised.complete(spec, MESSAGES))
            assert len(answer.text) == 3 * 2**20, transport


def test_the_option_reaches_the_run_and_an_oversize_answer_is_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    rows = "".join(json.dumps(r) + "\n" for r in make_rows(12))
    (tmp_path / "data.jsonl").write_text(rows, encoding="utf-8")
    (tmp_path / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    with serve(faults=FaultPlan(rate=1.0, kinds=["huge"], huge_mb=2)) as url:
        args = ["optimize", "data.jsonl", "prompt.md", "-m", "openai/task", "--api-base", url]
        args += ["--reasoning-model", "openai/reasoner", "--reasoning-base-url", url]
        args += ["--max-iterations", "1", "-o", "best.md", "--max-response-mb", "1"]
        with pytest.raises(SystemExit) as exit_info:
            main(args)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert exit_info.value.code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert "answer of more than 1 MB" in lines[0] and "--max-response-mb" in lines[0]
    assert not (tmp_path / "best.md").exists()


# --- items 10, 11: malformed answers ---------------------------------------------------------


def body(**change: Any) -> bytes:
    answer: dict[str, Any] = {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "hi"}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }
    answer.update(change)
    return json.dumps({k: v for k, v in answer.items() if v is not None}).encode()


@pytest.mark.parametrize(
    ("answer", "expect"),
    [
        (body(usage={"prompt_tokens": -29_000_145, "completion_tokens": 1}), "prompt_tokens="),
        (body(usage={"prompt_tokens": 10**30, "completion_tokens": 1}), "prompt_tokens="),
        (body(usage={"prompt_tokens": 3, "completion_tokens": 2.5}), "usage"),
        (body(choices=[]), "no choices[0].message"),
    ],
    ids=["negative-usage", "huge-usage", "fractional-usage", "empty-choices"],
)
@pytest.mark.parametrize("model", MODELS)
def test_a_malformed_answer_is_retried_then_one_line_and_never_counted(
    answer: bytes,
    expect: str,
    model: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    runner: LoopRunner,
) -> None:
    for transport in transports(monkeypatch):
        cache = ResponseCache(tmp_path / f"{transport}.sqlite")
        with serve(reply=Reply(200, answer)) as url:
            client = ProviderClient(ClientSettings(retry=FAST), cache=cache)
            spec = ModelSpec(model, api_base=url, extra={"api_key": "sk-x"})
            with pytest.raises(TransientProviderError) as failed:
                runner.run(client.complete(spec, MESSAGES))
            requests = url.stats().requests
        line = str(failed.value)
        assert "still failing after 2 attempts: MalformedAnswer: " in line, line
        assert expect in line or transport == "litellm", line  # LiteLLM: "not a completion"
        assert "\n" not in line and requests == 2, transport  # retried
        assert client.ledger.total().calls == 0 and cache.get(client.key(spec, MESSAGES)) is None


@pytest.mark.parametrize(
    ("error", "expect"),
    [
        ({"message": "model overloaded, try later", "code": 503}, TransientProviderError),
        ({"message": "Incorrect API key provided", "code": 401}, ProviderError),
    ],
    ids=["503", "401"],
)
@pytest.mark.parametrize("model", MODELS)
def test_an_error_in_a_200_answer_keeps_the_providers_words(
    error: dict[str, Any],
    expect: type[Exception],
    model: str,
    monkeypatch: pytest.MonkeyPatch,
    runner: LoopRunner,
) -> None:
    for transport in transports(monkeypatch):
        with serve(reply=Reply(200, json.dumps({"error": error}).encode())) as url:
            client = ProviderClient(ClientSettings(retry=FAST))
            spec = ModelSpec(model, api_base=url, extra={"api_key": "sk-x"})
            with pytest.raises(ProviderError) as failed:
                runner.run(client.complete(spec, MESSAGES))
        assert type(failed.value) is expect, (transport, failed.value)
        assert error["message"] in str(failed.value), (transport, failed.value)
        assert "'choices'" not in str(failed.value), (transport, failed.value)  # not KeyError
