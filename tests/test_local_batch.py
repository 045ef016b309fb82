"""Batched decoding of the embedded model (reflex.models.local_batch, ``--local-batch N``).

The helpers and the settings need no model; the ``real_model`` tests decode Qwen in a batch
through every way an evaluation calls it (plain answers, a named tool choice, a JSON-schema
grammar). Batched answers are not bit-identical to serial ones, so they are checked for what
they must be (a valid call, valid JSON, the same prompt tokens), not compared with serial ones.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_local_pool import PLAIN, SENTIMENT, _calls

from reflex.errors import ConfigurationError
from reflex.models import local, local_serving
from reflex.models.client import ClientSettings, Completion, ProviderClient
from reflex.models.local_batch import BatchEngine, _common, _completion, _Request, _stops
from reflex.models.runner import LoopRunner
from reflex.toolcalls import ToolCall, parse_answer


@pytest.fixture(autouse=True)
def _unbatched() -> Iterator[None]:
    yield
    local_serving.set_workers(0, 0)


def test_stop_sequences_and_prefixes() -> None:
    assert _stops("\n") == ["\n"] and _stops(["a", "", 3, "b"]) == ["a", "b"]
    assert _stops(None) == [] and _stops("") == []
    assert _common([1, 2, 3, 4], [1, 2, 9]) == 2 and _common([], [1]) == 0


def test_a_finished_request_reads_as_llama_cpp_s_completion() -> None:
    request = _Request([1, 2, 3], None, 8, [], None, completion=[7, 8], text="négatif".encode())
    request.finish = "stop"
    answer = _completion(request, "m")
    assert answer["choices"] == [
        {"text": "négatif", "index": 0, "logprobs": None, "finish_reason": "stop"}
    ]
    assert answer["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    assert answer["object"] == "text_completion" and answer["model"] == "m"


def test_the_setting_reaches_the_run_config() -> None:
    """(The CLI's --local-batch: tests/test_cli_args.py, with every option.)"""
    from reflex import PromptOptimizer
    from reflex.config import default
    from reflex.run.resume import MUTABLE_ON_RESUME

    assert default("local_batch") == 0 == ClientSettings().local_batch
    assert "local_batch" not in MUTABLE_ON_RESUME  # it changes answers: a resume keeps it
    assert PromptOptimizer().set_local_batch(4)._config.local_batch == 4


# --- the real model ----------------------------------------------------------------------------


@pytest.fixture
def qwen() -> Path:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed")
    try:
        path = local.qwen_model_path()
    except ConfigurationError as exc:
        pytest.skip(str(exc))
    local.register_local_provider()
    return path


def _batched(n: int) -> list[Completion]:
    client = ProviderClient(ClientSettings(max_workers=8, local_batch=n), cache=None)

    async def every() -> list[Completion]:
        return list(await asyncio.gather(*(client.complete(s, m) for s, m in _calls())))

    return LoopRunner.shared().run(every())


@pytest.mark.real_model
def test_a_batch_answers_every_kind_of_call(qwen: Path) -> None:
    answers = _batched(4)
    engine = local.batch_engine(qwen)
    assert engine.take_peak() > 1  # several sequences were decoded in one step
    serial = ProviderClient(ClientSettings(local_workers=1), cache=None)
    spec, messages = _calls()[0]
    alone = LoopRunner.shared().run(serial.complete(spec, messages))
    assert answers[0].prompt_tokens == alone.prompt_tokens  # the same template, same tokens
    for answer, (system, _) in zip(answers, PLAIN, strict=False):
        if system == SENTIMENT:
            assert answer.text.strip().lower() in ("positive", "negative")
    for answer, (base, height) in zip(
        answers[len(PLAIN) : len(PLAIN) + 2], ((10, 5), (7, 3)), strict=True
    ):
        assert parse_answer(answer.text) == (
            "",
            [ToolCall("calculate_triangle_area", {"base": base, "height": height})],
        )
    assert all(isinstance(json.loads(a.text), list) for a in answers[-2:])
    assert all(a.completion_tokens > 0 for a in answers)


@pytest.mark.real_model
def test_a_batch_refuses_what_it_cannot_do(qwen: Path) -> None:
    local_serving.set_workers(1, batch=2)
    engine: BatchEngine = local.batch_engine(qwen)
    with pytest.raises(ValueError, match="stream is not supported with --local-batch"):
        engine.complete([1, 2, 3], {"stream": True})
    with pytest.raises(ValueError, match="exceed context window of 2048"):
        engine.complete([1] * 2048, {})
