"""Demos of tool calls are sent as the application sees them (issue 31, item 4).

A demo whose output is a tool-call answer (canonical answer text) becomes an assistant message
with real ``tool_calls`` (ids ``demo_<n>_<i>``) and one ``tool`` message per call answering its
id; a JSON demo's output is the assistant content as written. Checked on the message list
(:func:`reflex.prompt_messages`), on the wire (lean transport and LiteLLM send the same body, on
the local endpoint) and in a ``fewshot`` run whose demos are tool calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reflex import PromptOptimizer, prompt_messages
from reflex.api import render_chat_demos
from reflex.data.dataset import Dataset
from reflex.data.demos import saved_template
from reflex.data.templates import template_text
from reflex.models import litellm_call
from reflex.models.client import load_litellm
from reflex.models.litellm_call import Completion, call_once
from reflex.models.runner import LoopRunner
from reflex.models.spec import ModelSpec
from reflex.testing.chat import ChatRequest
from reflex.testing.endpoint import serve
from reflex.testing.http import Request
from reflex.toolcalls import ToolCall, render_answer
from reflex.types import Example
from tests.test_wire import both

HYPOT: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "math_hypot",
        "description": "Euclidean norm of a vector.",
        "parameters": {
            "type": "object",
            "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
            "required": ["x", "y"],
        },
    },
}
TWO_CALLS = render_answer(
    "Both.", [ToolCall("math_hypot", {"x": 3, "y": 4}), ToolCall("math_hypot", {"x": 6, "y": 8})]
)
ONE_CALL = render_answer(None, [ToolCall("math_hypot", {"x": 5, "y": 12})])
JSON_OUT = '{"value": 3, "unit": "kg"}'
PROMPT = "Use the tools.\n\n" + render_chat_demos(
    [("hypot of 3,4 and 6,8", TWO_CALLS), ("weigh it", JSON_OUT), ("hypot of 5,12", ONE_CALL)]
)


def _call(name: str, args: dict[str, int], call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


EXPECTED_DEMOS: list[dict[str, Any]] = [
    {"role": "user", "content": "hypot of 3,4 and 6,8"},
    {
        "role": "assistant",
        "content": "Both.",
        "tool_calls": [
            _call("math_hypot", {"x": 3, "y": 4}, "demo_1_0"),
            _call("math_hypot", {"x": 6, "y": 8}, "demo_1_1"),
        ],
    },
    {"role": "tool", "tool_call_id": "demo_1_0", "content": "ok"},
    {"role": "tool", "tool_call_id": "demo_1_1", "content": "ok"},
    {"role": "user", "content": "weigh it"},
    {"role": "assistant", "content": JSON_OUT},  # JSON: the output as written
    {"role": "user", "content": "hypot of 5,12"},
    {
        "role": "assistant",
        "content": None,  # calls only: no text
        "tool_calls": [_call("math_hypot", {"x": 5, "y": 12}, "demo_2_0")],
    },
    {"role": "tool", "tool_call_id": "demo_2_0", "content": "ok"},
]


def test_a_tool_call_demo_is_a_tool_calls_turn_answered_by_tool_messages() -> None:
    messages = prompt_messages(PROMPT, "hypot of 8,15")
    assert messages[0] == {"role": "system", "content": "Use the tools."}
    assert messages[1:-1] == EXPECTED_DEMOS
    assert messages[-1] == {"role": "user", "content": "hypot of 8,15"}
    assert prompt_messages(PROMPT, "hypot of 8,15") == messages  # deterministic: one cache key
    # Every call id is answered by exactly one tool message, right after its turn.
    ids = [c["id"] for m in messages for c in m.get("tool_calls", [])]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert ids == answered and len(set(ids)) == len(ids)


def test_a_rows_own_conversation_is_not_rewritten() -> None:
    own = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ONE_CALL}]
    own.append({"role": "user", "content": "again"})
    messages = prompt_messages("Plain prompt.", own)
    assert messages[1:] == own  # text in the row stays text: only demos become tool turns


def test_a_chat_templates_demos_and_its_saved_form_send_the_same_tool_turns() -> None:
    template = template_text(
        [
            {"role": "system", "content": "Use the tools."},
            {"role": "user", "content": "Question: {{q}}"},
        ]
    )
    prompt = template + "\n\n" + render_chat_demos([('{"q": "hypot of 5,12"}', ONE_CALL)])
    row = {"q": "hypot of 8,15"}
    scored = prompt_messages(prompt, row)
    assert scored[1] == {"role": "user", "content": "Question: hypot of 5,12"}
    assert scored[2]["tool_calls"][0]["id"] == "demo_1_0"
    assert scored[3] == {"role": "tool", "tool_call_id": "demo_1_0", "content": "ok"}
    assert scored[-1] == {"role": "user", "content": "Question: hypot of 8,15"}
    saved = saved_template(prompt)
    assert saved is not None  # what -o writes: demos as text turns, readable as a template
    assert all(set(m) == {"role", "content"} for m in saved)
    assert prompt_messages(saved, row) == scored  # deploying the saved form sends the same


@pytest.fixture(scope="module")
def litellm() -> Any:
    return load_litellm()


@pytest.fixture(autouse=True)
def no_litellm_callbacks(litellm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in litellm_call._LITELLM_CALLBACK_LISTS:
        monkeypatch.setattr(litellm, name, [])


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "hosted_vllm/qwen"])
def test_the_demo_tool_turns_go_on_the_wire_alike_on_both_transports(
    runner: LoopRunner, litellm: Any, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    captured: list[Request] = []
    messages = prompt_messages(PROMPT, "hypot of 8,15")
    with serve(capture=captured, responder=lambda _: ONE_CALL) as url:
        spec = ModelSpec(model, api_base=url, extra={"api_key": "sk-test"}, tools=(HYPOT,))
        lean, full = both(
            runner, litellm, monkeypatch, lambda: call_once(litellm, spec, messages, 1)
        )
    assert isinstance(lean, Completion) and isinstance(full, Completion), (lean, full)
    lean_body, full_body = (json.loads(r.body) for r in captured)
    assert lean_body["messages"] == full_body["messages"]
    sent = lean_body["messages"]
    assert [m["role"] for m in sent] == ["system", *(m["role"] for m in EXPECTED_DEMOS), "user"]
    turn = sent[2]
    assert [c["id"] for c in turn["tool_calls"]] == ["demo_1_0", "demo_1_1"]
    assert json.loads(turn["tool_calls"][1]["function"]["arguments"]) == {"x": 6, "y": 8}
    assert sent[3] == {"role": "tool", "tool_call_id": "demo_1_0", "content": "ok"}
    assert sent[6]["content"] == JSON_OUT


def _rows(n: int = 12) -> Dataset:
    examples = []
    for i in range(n):
        x, y = 3 + i, 4 + 2 * i
        call = render_answer(None, [ToolCall("math_hypot", {"x": x, "y": y})])
        messages = ({"role": "user", "content": f"hypot of {x} and {y}"},)
        examples.append(Example(id=f"r{i}", messages=messages, ideal=call))
    return Dataset(examples, name="hypot")


def test_a_fewshot_run_sends_its_demos_as_tool_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The endpoint calls the tool only after it has seen a demo tool-call turn; the run finds
    that, so its final prompt's demos reached the endpoint as real calls."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    seen: list[ChatRequest] = []

    def respond(request: ChatRequest) -> str:
        seen.append(request)
        if not any(m.get("tool_calls") for m in request.messages):
            return "I would compute the hypotenuse."
        x, _, y = request.user.removeprefix("hypot of ").partition(" and ")
        return render_answer(None, [ToolCall("math_hypot", {"x": int(x), "y": int(y)})])

    with serve(responder=respond) as url:
        result = (
            PromptOptimizer()
            .set_dataset(_rows())
            .set_tools([HYPOT])
            .add_provider("openai/gpt-4o-mini", api_base=url)
            .add_metric("tool_call")
            .set_strategy("fewshot", demo_source="labels")
            .set_run_dir(tmp_path)
            .configure(max_iterations=2, early_stopping_patience=None)
            .set_accept("any")  # a handful of val rows: the demo turns are under test
            .run("Use the tools.")
        )
    demo_requests = [r for r in seen if any(m.get("tool_calls") for m in r.messages)]
    assert demo_requests, "no request held a demo as a tool-call turn"
    for request in demo_requests:
        for at, message in enumerate(request.messages):
            for call in message.get("tool_calls") or []:
                assert call["id"].startswith("demo_")
                answer = request.messages[at + 1 + message["tool_calls"].index(call)]
                assert answer == {"role": "tool", "tool_call_id": call["id"], "content": "ok"}
    assert result.baseline is not None and result.baseline.mean_score == 0.0
    assert result.final is not None and result.final.mean_score == 1.0


def test_the_embedded_models_chat_template_renders_the_demo_calls_and_results() -> None:
    """The Qwen GGUF's own chat template (read with ``vocab_only``: no weights) renders each demo
    call as a ``<tool_call>`` turn and its result as a ``<tool_response>``."""
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed")
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from reflex.errors import ConfigurationError
    from reflex.models import local
    from reflex.models.local_tools import template_messages

    try:
        path = local.qwen_model_path()
    except ConfigurationError as exc:
        pytest.skip(str(exc))
    model = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    formatter = Jinja2ChatFormatter(
        template=model.metadata["tokenizer.chat_template"], eos_token="<|im_end|>", bos_token=""
    )
    messages = template_messages(prompt_messages(PROMPT, "hypot of 8,15"))
    text = formatter(messages=messages, tools=[HYPOT]).prompt
    assert text.count('<tool_call>\n{"name": "math_hypot"') == 3  # the demos' three calls
    assert text.count("<tool_response>\nok\n</tool_response>") == 3
    assert '{"name": "math_hypot", "arguments": {"x": 5, "y": 12}}' in text
    assert f"<|im_start|>assistant\n{JSON_OUT}<|im_end|>" in text  # a JSON demo: its text
