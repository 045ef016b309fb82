"""Random provider answers (status, headers, body) on both transports (issue 29, properties).

Whatever the local endpoint answers every call with, ``optimize`` either runs or exits 2 with
one ``error:`` line and no traceback, writes no ``-o`` file as if it had succeeded, and never
counts a negative token. Retries are made fast (the policy's delays, not its classification).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from reflex.cli import main
from reflex.models import litellm_call
from reflex.models.client import load_litellm
from reflex.models.retry import RetryPolicy
from reflex.testing.endpoint import Reply, serve

_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**31), 10**31) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)
_valid = {
    "id": "chatcmpl-x",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "positive"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


@st.composite
def _bodies(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["mutated", "json", "bytes", "error"]))
    if kind == "bytes":
        return draw(st.binary(max_size=60))
    if kind == "json":
        return json.dumps(draw(_values)).encode()
    answer: dict[str, Any] = json.loads(json.dumps(_valid))
    if kind == "error":
        answer = {"error": draw(st.dictionaries(st.sampled_from(["message", "code"]), _values))}
    for field in draw(st.lists(st.sampled_from(["choices", "usage", "message", "tokens"]))):
        value = draw(_values)
        if field == "message":
            answer["choices"] = [{"index": 0, "message": value}]
        elif field == "tokens":
            answer["usage"] = {"prompt_tokens": value, "completion_tokens": draw(_values)}
        else:
            answer[field] = value
    return json.dumps(answer).encode()


_headers = st.dictionaries(
    st.sampled_from(["Content-Type", "Retry-After", "Content-Encoding", "X-Request-Id"]),
    st.sampled_from(["text/html", "application/json", "gzip", "-1", "nan", "1", "Wed, 21"]),
    max_size=3,
)
_statuses = st.sampled_from([200, 200, 200, 201, 400, 401, 403, 404, 408, 422, 429, 500, 503])
_replies = st.builds(Reply, _statuses, _bodies(), _headers)
ROWS = "".join(json.dumps(r) + "\n" for r in make_rows(6))
FAST = functools.partial(
    RetryPolicy, max_retries=1, base_delay=0.001, max_delay=0.01, max_retries_with_progress=1
)


@pytest.fixture(scope="module", autouse=True)
def no_litellm_callbacks() -> Any:
    litellm = load_litellm()
    with pytest.MonkeyPatch.context() as patch:
        for name in litellm_call._LITELLM_CALLBACK_LISTS:
            patch.setattr(litellm, name, [])
        yield


@pytest.mark.parametrize("lean", ["1", "0"])
@pytest.mark.parametrize("model", ["openai/task", "hosted_vllm/task"])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reply=_replies)
@example(  # a negative count: it once lowered a priced run's spend
    reply=Reply(200, json.dumps({**_valid, "usage": {"prompt_tokens": -29_000_145}}).encode())
)
def test_any_answer_runs_or_is_one_line_exit_2_and_nothing_half_made(
    reply: Reply, lean: str, model: str
) -> None:
    before = Path.cwd()
    stderr = io.StringIO()
    with (
        tempfile.TemporaryDirectory() as folder,
        serve(reply=reply) as url,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setenv("REFLEX_LEAN_TRANSPORT", lean)
        patch.setenv("OPENAI_API_KEY", "sk-test")
        patch.setattr("reflex.run.opening.RetryPolicy", FAST)
        root = Path(folder)
        (root / "data.jsonl").write_text(ROWS, encoding="utf-8")
        (root / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
        os.chdir(root)
        try:
            args = ["optimize", "data.jsonl", "prompt.md", "-m", model, "--api-base", url]
            args += ["--reasoning-model", model, "--reasoning-base-url", url]
            args += ["--max-iterations", "1", "-o", "best.md", "--results-json", "r.json"]
            with contextlib.redirect_stderr(stderr), pytest.raises(SystemExit) as exit_info:
                main(args)
        finally:
            os.chdir(before)
        code = exit_info.value.code
        written = (root / "best.md").exists()
        result = json.loads((root / "r.json").read_text()) if (root / "r.json").exists() else None
    err = stderr.getvalue()
    assert "Traceback" not in err, err
    if code in (0, 4):  # ran (4: it found no better prompt, the answers being all the same)
        assert result is not None and all(
            value is None or value >= 0 for value in result["usage"]["total"].values()
        ), result["usage"]
        return
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(lines) == 1, (reply, err)
    assert not written, (reply, err)
