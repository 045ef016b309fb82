"""Fakes for our tests and for plugin authors.

``FakeModel`` is a deterministic model that sits behind the LiteLLM boundary (a LiteLLM custom
provider, ``fake/<name>`` by default), so code under test makes real ``litellm.acompletion``
calls. Offered tools, it answers as the local endpoint does: the ``<tool_call>`` lines of the
responder's text are the message's ``tool_calls`` (:func:`reflex.testing.chat.answer_message`).
``RecordingCallback`` records every lifecycle call in order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reflex.callbacks import Callback
from reflex.models.client import register_provider
from reflex.testing.chat import answer_message

if TYPE_CHECKING:
    from litellm.llms.custom_llm import CustomLLM

    from reflex.config import RunConfig
    from reflex.result import EvalSnapshot, IterationRecord, OptimizationResult

__all__ = ["FakeModel", "FakeRequest", "RecordingCallback"]


@dataclass(frozen=True)
class FakeRequest:
    """What the fake model was asked: the model name, the system prompt, the last user turn."""

    model: str
    system: str
    user: str
    messages: tuple[dict[str, str], ...]
    params: dict[str, object] = field(default_factory=dict)


Responder = Callable[[FakeRequest], str]
Fault = Callable[[FakeRequest, int], BaseException | None]


def _echo(request: FakeRequest) -> str:
    return request.user


class FakeModel:
    """A scriptable, thread-safe fake model; ``install()`` makes ``<provider>/...`` resolve to it.

    ``responder(request) -> str`` decides the answer; ``fault(request, call_number)`` may return
    an exception to raise for that call (e.g. ``litellm.RateLimitError``) to simulate faults.
    Token usage is the word count of the messages and of the answer.
    """

    def __init__(
        self, responder: Responder = _echo, *, fault: Fault | None = None, provider: str = "fake"
    ) -> None:
        self.responder = responder
        self.fault = fault
        self.provider = provider
        self.requests: list[FakeRequest] = []
        self._lock = threading.Lock()

    def install(self) -> FakeModel:
        register_provider(self.provider, lambda litellm: _adapter(litellm, self))
        return self

    def calls_to(self, model: str) -> list[FakeRequest]:
        return [r for r in self.requests if r.model == model]

    def answer(
        self, model: str, messages: Sequence[dict[str, str]], params: dict[str, object]
    ) -> tuple[str, int, int]:
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        request = FakeRequest(model, system, user, tuple(dict(m) for m in messages), params)
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
        if self.fault is not None:
            error = self.fault(request, number)
            if error is not None:
                raise error
        text = self.responder(request)
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
        return text, prompt_tokens, len(text.split())


# Untyped: the handler subclasses ``litellm.CustomLLM`` read off the module LiteLLM was loaded as.
def _adapter(litellm: Any, fake: FakeModel) -> CustomLLM:
    class _FakeLLM(litellm.CustomLLM):  # type: ignore[misc]
        def completion(
            self, model: str, messages: list[dict[str, str]], *args: object, **kwargs: object
        ) -> object:
            optional = kwargs.get("optional_params")
            params = dict(optional) if isinstance(optional, Mapping) else {}
            text, p_tokens, c_tokens = fake.answer(f"{fake.provider}/{model}", messages, params)
            message, finish = answer_message(text, bool(params.get("tools")))
            return litellm.ModelResponse(
                model=model,
                choices=[{"index": 0, "finish_reason": finish, "message": message}],
                usage={
                    "prompt_tokens": p_tokens,
                    "completion_tokens": c_tokens,
                    "total_tokens": p_tokens + c_tokens,
                },
            )

        async def acompletion(
            self, model: str, messages: list[dict[str, str]], *args: object, **kwargs: object
        ) -> object:
            return self.completion(model, messages, *args, **kwargs)

    return _FakeLLM()


class RecordingCallback(Callback):
    """Records ``(hook, args)`` for every lifecycle call, in order (progress calls excluded)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[object, ...]]] = []

    @property
    def hooks(self) -> list[str]:
        return [name for name, _ in self.calls]

    def on_run_start(self, config: RunConfig, initial_prompt: str) -> None:
        self.calls.append(("on_run_start", (config, initial_prompt)))

    def on_baseline(self, snapshot: EvalSnapshot) -> None:
        self.calls.append(("on_baseline", (snapshot,)))

    def on_iteration(self, record: IterationRecord) -> None:
        self.calls.append(("on_iteration", (record,)))

    def on_final(self, snapshot: EvalSnapshot) -> None:
        self.calls.append(("on_final", (snapshot,)))

    def on_run_end(self, result: OptimizationResult) -> None:
        self.calls.append(("on_run_end", (result,)))

    def on_run_error(self, error: BaseException, partial: OptimizationResult | None) -> None:
        self.calls.append(("on_run_error", (error, partial)))
