"""One LiteLLM call, and the per-call work around it kept as cheap as LiteLLM allows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import Token
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from reflex.models.answers import MalformedAnswer, message_text, token_counts
from reflex.models.body_limit import watching
from reflex.models.wire import lean_route, send

if TYPE_CHECKING:
    from reflex.models.spec import ModelSpec

__all__ = ["Completion", "MalformedAnswer", "call_once", "litellm_listens"]


@dataclass(frozen=True)
class Completion:
    """One answered call. Usage numbers are the original call's, also on a cache hit."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    cached: bool
    attempts: int
    deployment: str | None = None  # the Router deployment that served it (reflex.models.router)


class _Message(Protocol):
    @property
    def content(self) -> str | None: ...


class _Choice(Protocol):
    @property
    def message(self) -> _Message: ...


class _Response(Protocol):
    """What we read of LiteLLM's ``ModelResponse`` (usage and pricing are read defensively)."""

    @property
    def choices(self) -> Sequence[_Choice]: ...


async def call_once(
    litellm: ModuleType, spec: ModelSpec, messages: Sequence[Mapping[str, object]], attempt: int
) -> Completion:
    """One attempt: over the lean transport when LiteLLM routes ``spec`` there, else LiteLLM's."""
    route = None if litellm_listens(litellm) else lean_route(litellm, spec)
    if route is not None:
        answer = await send(litellm, route, messages)
        return Completion(
            answer.text,
            answer.prompt_tokens,
            answer.completion_tokens,
            answer.cost,
            cached=False,
            attempts=attempt,
        )
    quiet = _skip_litellm_logging(litellm)
    with watching() as watch:  # the answer is read up to --max-response-mb
        try:
            response: _Response = await litellm.acompletion(
                model=spec.model, messages=list(messages), **spec.call_kwargs()
            )
        except Exception as exc:
            if watch.tripped is not None:  # LiteLLM wrapped it ("Connection error." ...)
                raise watch.tripped from exc
            if any(sign in str(exc) for sign in _UNREADABLE):  # as the lean transport says it
                raise MalformedAnswer(
                    "the provider's answer is not a chat completion (LiteLLM: invalid response "
                    "object)"
                ) from exc
            raise
        finally:
            if quiet is not None:
                quiet.var.reset(quiet)
    if not response.choices or getattr(response.choices[0], "message", None) is None:
        raise MalformedAnswer("the provider's answer has no choices[0].message")
    text = message_text(response.choices[0].message)
    prompt_tokens, completion_tokens = usage_of(response)
    return Completion(
        text,
        prompt_tokens,
        completion_tokens,
        _cost(litellm, response),
        cached=False,
        attempts=attempt,
    )


# What LiteLLM says of a 200 answer it cannot read as a completion (a malformed usage ...).
_UNREADABLE = ("Invalid response object", "Empty or invalid response from LLM endpoint")


def usage_of(response: object) -> tuple[int, int]:
    """(prompt, completion) tokens of LiteLLM's response, checked as the lean transport checks
    them (:func:`reflex.models.answers.token_counts`)."""
    usage = getattr(response, "usage", None)
    if usage is None:
        return 0, 0
    counts = {name: getattr(usage, name, None) for name in ("prompt_tokens", "completion_tokens")}
    prompt_tokens, completion_tokens, _ = token_counts(counts)
    return prompt_tokens, completion_tokens


_LITELLM_CALLBACK_LISTS = (
    "callbacks",
    "success_callback",
    "_async_success_callback",
    "failure_callback",
    "_async_failure_callback",
    "input_callback",
    "_async_input_callback",
)


def litellm_listens(litellm: object) -> bool:
    """Whether a LiteLLM callback is registered (someone reads LiteLLM's per-call logging).

    Our own Router hooks (``reflex_internal = True``: the deployment pacer of
    :mod:`reflex.models.pacing`) read no logging; once installed they stay for the process, and
    counting them sent every later call of the process down LiteLLM's full path.
    """
    return any(
        not getattr(callback, "reflex_internal", False)
        for name in _LITELLM_CALLBACK_LISTS
        for callback in getattr(litellm, name, None) or ()
    )


def _skip_litellm_logging(litellm: object) -> Token[bool] | None:
    """Turn off LiteLLM's per-call logging for this call when nobody listens to it.

    With no LiteLLM callback registered, its success/failure handlers only build a logging
    payload nobody reads (~1 ms of CPU per call; we keep our own ledger and events). LiteLLM marks
    such calls with its ``is_internal_call`` context variable, which skips exactly that dispatch;
    the response, its usage and its ``response_cost`` are computed as before. A user who adds a
    LiteLLM callback (e.g. ``mlflow.litellm.autolog()``) gets full logging again. Returns the
    token to reset, or None when logging stays on (or this LiteLLM has no such switch).
    """
    if litellm_listens(litellm):
        return None
    internal = getattr(litellm, "_internal_context", None)
    flag = getattr(internal, "is_internal_call", None)
    return None if flag is None else flag.set(True)


# Models LiteLLM could not price once: asking again costs ~0.3 ms per call and cannot succeed.
_UNPRICED: set[str] = set()


def _cost(litellm: ModuleType, response: object) -> float | None:
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost")
    if cost is not None:
        return float(cost)
    model = str(getattr(response, "model", "") or "") + "|" + str(hidden.get("litellm_model_name"))
    if model in _UNPRICED:
        return None
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # noqa: BLE001 - unknown models have no price; cost stays unknown
        _UNPRICED.add(model)
        return None
