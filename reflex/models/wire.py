"""A lean transport for providers that speak OpenAI's chat-completions wire format.

LiteLLM spends 3-8 ms of CPU per call building the request through its generic machinery,
building pydantic response objects, logging and pricing, where the HTTP exchange itself costs
well under 1 ms. For the providers listed in :data:`LEAN_PROVIDERS`, LiteLLM still decides
everything, once per model spec (and again whenever the environment or LiteLLM's module
settings change): the provider, model name, endpoint URL, API key and headers
(``get_llm_provider``, the provider config's ``validate_environment`` / ``get_complete_url``),
the request parameters (``get_optional_params``, ``transform_request``), the error class of a
failed request (the config's ``get_error_class`` and LiteLLM's ``exception_type``) and the price
of the usage (``cost_per_token``). Only the request itself goes over one shared ``aiohttp``
session per event loop. Every other provider, every call with a parameter outside
:data:`_PLAIN_PARAMS`, and every call made while a LiteLLM callback is registered (someone reads
LiteLLM's logging) takes LiteLLM's full path. ``REFLEX_LEAN_TRANSPORT=0`` turns this off.

The session takes its proxy from the environment (``HTTP(S)_PROXY``, ``NO_PROXY``), resolved
with the route, but never credentials from ``~/.netrc``: aiohttp's ``trust_env`` adds those as
basic auth, which collides with the provider's key (every call failed with "set the provider's
API key" under a ``default`` entry). Answers are read up to ``--max-response-mb``
(:mod:`reflex.models.body_limit`) and checked as LiteLLM's path checks them
(:mod:`reflex.models.answers`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from reflex.models.answers import answer_text, error_in_body, token_counts
from reflex.models.body_limit import read_capped
from reflex.models.pricing import price
from reflex.models.target import base_env, base_url
from reflex.models.wire_body import (
    PROBE,
    Route,
    body_params,
    chat_config,
    sent_messages,
    with_options,
)
from reflex.models.wire_session import env_proxy
from reflex.models.wire_session import session as http_session

if TYPE_CHECKING:
    from reflex.models.spec import ModelSpec

__all__ = [
    "LEAN_PROVIDERS",
    "Route",
    "WireAnswer",
    "lean_candidate",
    "lean_route",
    "send",
    "with_options",
]

# Providers whose chat calls are a plain JSON POST to ``<api_base>/chat/completions``, and how
# LiteLLM finds their base URL and key (arg > module setting > environment > default), as its
# own dispatch does for each (``litellm.main``). Each is proven against LiteLLM in the tests.
LEAN_PROVIDERS: dict[str, tuple[tuple[str, ...], str | None, tuple[str, ...]]] = {
    # provider: (base URL env vars, default base, key settings on the litellm module)
    "openai": (
        base_env("openai"),
        "https://api.openai.com/v1",
        ("openai_key",),
    ),
    "hosted_vllm": (base_env("hosted_vllm"), None, ()),
}
# Providers LiteLLM calls through the OpenAI SDK (the rest through its own HTTP handler): they
# differ in how a lost connection or an unreadable answer is reported.
_SDK_PATH = frozenset({"openai"})
_KEY_ENV = {"openai": ("OPENAI_API_KEY",), "hosted_vllm": ()}
# Decoding parameters passed through LiteLLM's parameter mapping; anything else (tools,
# response_format, extra_body, headers ...) takes LiteLLM's full path.
_PLAIN_PARAMS = frozenset({"top_p", "stop", "presence_penalty", "frequency_penalty", "user"})
# Settings that change what LiteLLM would send: with any of them set, the full path.
_FULL_PATH_ENV = (
    "OPENAI_ORGANIZATION",
    "OPENAI_PROJECT_ID",
    "EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER",
)


@dataclasses.dataclass(frozen=True)
class WireAnswer:
    text: str
    prompt_tokens: int
    completion_tokens: int
    cost: float | None


_ROUTES: dict[tuple[object, ...], Route | None] = {}
_BY_SPEC: dict[int, tuple[ModelSpec, tuple[object, ...], Route | None]] = {}
_SETTING_ENV = (
    "REFLEX_LEAN_TRANSPORT",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "HOSTED_VLLM_API_BASE",
    "HOSTED_VLLM_API_KEY",
    *(
        name
        for base in ("http", "https", "no")
        for name in (f"{base}_proxy", f"{base.upper()}_PROXY")
    ),
)
_SETTING_NAMES = ("api_key", "api_base", "drop_params", "openai_key", "ssl_verify")


def lean_route(litellm: ModuleType, spec: ModelSpec) -> Route | None:
    """The lean route for ``spec``, or None when the call takes LiteLLM's full path.

    Resolved by LiteLLM once per spec and settings: the environment variables and LiteLLM
    module settings a route depends on are read on every call (~10 us) and compared. A spec's
    tools, tool choice and response format are added to its plain route (:func:`with_options`).
    """
    if spec.tools or spec.response_format is not None:
        plain = lean_route(litellm, spec.without_options())
        return None if plain is None else with_options(plain, spec)
    settings = _settings(litellm)
    known = _BY_SPEC.get(id(spec))
    if known is not None and known[0] is spec and known[1] == settings:
        return known[2]
    try:
        extra = json.dumps(dict(spec.extra), sort_keys=True)
    except (TypeError, ValueError):  # a parameter JSON cannot carry: not a plain call
        return None
    fields = (spec.model, spec.api_base, spec.temperature, spec.max_tokens, spec.seed)
    key = (*fields, spec.timeout, extra, settings)
    if key not in _ROUTES:
        if len(_ROUTES) > 256:  # settings keep changing (a test suite): start again
            _ROUTES.clear()
            _BY_SPEC.clear()
        _ROUTES[key] = _resolve(litellm, spec)
    if len(_BY_SPEC) > 1024:  # specs made afresh for each call: keep the memo small
        _BY_SPEC.clear()
    _BY_SPEC[id(spec)] = (spec, settings, _ROUTES[key])
    return _ROUTES[key]


def _settings(litellm: ModuleType) -> tuple[object, ...]:
    """What a route depends on beyond the spec: the environment and LiteLLM's module settings."""
    environ = os.environ
    values = [environ.get(name) for name in _SETTING_ENV]
    values += [environ.get(name) for name in _FULL_PATH_ENV]
    values += [getattr(litellm, name, None) for name in _SETTING_NAMES]
    for name in ("headers", "organization", "aclient_session"):
        value = getattr(litellm, name, None)
        values.append(repr(value) if value else None)
    return tuple(values)


def _switched_off() -> bool:
    return os.environ.get("REFLEX_LEAN_TRANSPORT", "1").strip().lower() in ("0", "false", "off")


def lean_candidate(spec: ModelSpec) -> bool:
    """Whether ``spec`` is likely to take the lean transport (decided without LiteLLM).

    The client keeps such calls in the run's process rather than in a client process, where
    LiteLLM's full path costs several times the CPU (bench/README.md).
    """
    provider = spec.model.partition("/")[0]
    plain = all(name == "api_key" or name in _PLAIN_PARAMS for name in spec.extra)
    return provider in LEAN_PROVIDERS and plain and not _switched_off()


def _resolve(litellm: Any, spec: ModelSpec) -> Route | None:
    if _switched_off():
        return None
    extra = dict(spec.extra)
    given_key = extra.pop("api_key", None)
    if any(name not in _PLAIN_PARAMS for name in extra) or not _plain_settings(litellm):
        return None
    try:
        model, provider, found_key, found_base = litellm.get_llm_provider(
            spec.model, api_base=spec.api_base, api_key=given_key
        )
    except Exception:  # noqa: BLE001 - LiteLLM's full path raises its own error for it
        return None
    if provider not in LEAN_PROVIDERS:
        return None
    _, default_base, key_settings = LEAN_PROVIDERS[provider]
    # The one resolution the cache key is made of too (reflex.models.target.selectors).
    api_base = base_url(
        provider, spec.api_base, found=found_base, module=litellm.api_base, default=default_base
    )
    key_sources = [getattr(litellm, name, None) for name in ("api_key", *key_settings)]
    api_key = _first(given_key, found_key, *key_sources, *map(os.environ.get, _KEY_ENV[provider]))
    if api_base is None or (api_key is None and provider != "hosted_vllm"):
        return None  # LiteLLM's full path raises the missing-setting error
    parts = urlsplit(str(api_base))
    if parts.query or parts.fragment or parts.username or parts.password:
        return None  # the SDK joins such a URL its own way; credentials: LiteLLM's refusal
    if _bridged_to_responses(model, provider, str(api_base)):
        return None  # LiteLLM sends this model to the Responses API, not chat completions
    try:
        return _build(litellm, spec, model, provider, str(api_base), api_key, extra)
    except Exception:  # noqa: BLE001 - e.g. a parameter the model refuses: LiteLLM's full path
        return None  # raises its own error for it, classified as before


def _bridged_to_responses(model: str, provider: str, api_base: str) -> bool:
    """Whether LiteLLM would bridge this chat call to OpenAI's Responses API (its own check)."""
    try:
        from litellm.responses.bridge_check import responses_api_bridge_check

        info, _ = responses_api_bridge_check(
            model=model, custom_llm_provider=provider, api_base=api_base
        )
    except Exception:  # noqa: BLE001 - a LiteLLM without the check: stay on its full path
        return True
    return info.get("mode") == "responses"


def _plain_settings(litellm: ModuleType) -> bool:
    if any(os.environ.get(name) for name in _FULL_PATH_ENV):
        return False
    ssl_verify = getattr(litellm, "ssl_verify", True)
    return not any(
        getattr(litellm, name, None) for name in ("headers", "organization", "aclient_session")
    ) and (ssl_verify is True)


def _first(*values: object) -> str | None:
    return next((str(value) for value in values if value), None)


def _build(
    litellm: Any,
    spec: ModelSpec,
    model: str,
    provider: str,
    api_base: str,
    api_key: str | None,
    extra: dict[str, object],
) -> Route | None:
    from litellm.utils import get_optional_params

    config = chat_config(model, provider)
    if config is None:
        return None
    decoding: dict[str, object] = {
        "temperature": spec.temperature,
        "max_tokens": spec.max_tokens,
        "seed": spec.seed,
        **extra,
    }
    chosen: dict[str, Any] = {name: value for name, value in decoding.items() if value is not None}
    optional = get_optional_params(model=model, custom_llm_provider=provider, **chosen)
    if optional.get("stream") or optional.get("extra_headers"):
        return None
    headers = config.validate_environment({}, model, PROBE, dict(optional), {}, api_key, api_base)
    url = config.get_complete_url(api_base, api_key, model, dict(optional), {}, stream=False)
    params = body_params(config, model, optional, headers)
    if params is None:
        return None
    proxy, proxy_auth = env_proxy(str(url))
    return Route(
        model, provider, str(url), dict(headers), params, spec.timeout, proxy, proxy_auth, chosen
    )


async def send(
    litellm: ModuleType, route: Route, messages: Sequence[Mapping[str, object]]
) -> WireAnswer:
    """One request over the shared session; failures raise LiteLLM's exception classes."""
    import aiohttp

    body = dict(route.params)
    body["messages"] = sent_messages(route, messages)
    data = json.dumps(body, ensure_ascii=False).encode()
    timeout = aiohttp.ClientTimeout(total=route.timeout)
    try:
        async with (
            http_session() as session,
            session.post(
                route.url,
                data=data,
                headers=route.headers,
                timeout=timeout,
                proxy=route.proxy,
                proxy_auth=route.proxy_auth,
            ) as response,
        ):
            status, headers = response.status, response.headers
            raw = await read_capped(response, _where(route))
    except asyncio.TimeoutError as exc:
        raise litellm.Timeout(
            message=f"Request timed out after {route.timeout} seconds.",
            model=route.model,
            llm_provider=route.provider,
        ) from exc
    except (aiohttp.ClientError, OSError) as exc:
        # What LiteLLM raises for a lost connection: the OpenAI SDK's "Connection error.", or
        # the transport's own message on LiteLLM's HTTP handler, as a 500 of the provider.
        message = "Connection error." if route.provider in _SDK_PATH else str(exc)
        raise _provider_error(route, 500, message, {}) from exc
    if status >= 400:
        raise _provider_error(route, status, raw.decode("utf-8", "replace"), headers)
    return _answer(litellm, route, raw, status, headers)


def _where(route: Route) -> str:
    parts = urlsplit(route.url)  # no credentials, no query
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}{parts.path}"


def _provider_error(
    route: Route, status: int, message: str, headers: Mapping[str, str]
) -> BaseException:
    """The exception LiteLLM raises for this HTTP failure (same class, status and headers)."""
    import httpx
    from litellm.litellm_core_utils import exception_mapping_utils

    mapping: Any = exception_mapping_utils  # untyped in LiteLLM
    plain = httpx.Headers(list(headers.items()))
    error: BaseException = chat_config(route.model, route.provider).get_error_class(
        message, status, plain
    )
    try:
        mapping.exception_type(
            model=route.model, original_exception=error, custom_llm_provider=route.provider
        )
    except Exception as mapped:  # noqa: BLE001 - what exception_type raises is the answer
        return mapped
    return error


def _answer(
    litellm: Any, route: Route, raw: bytes, status: int, headers: Mapping[str, str]
) -> WireAnswer:
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        # As LiteLLM reports an unreadable answer: the SDK's parse error as a 500, or its HTTP
        # handler's "Unable to get json response" with the answer's own status.
        if route.provider in _SDK_PATH:
            raise _provider_error(route, 500, str(exc), headers) from exc
        text = raw.decode("utf-8", "replace")
        message = f"Unable to get json response - {exc}, Original Response: {text}"
        raise _provider_error(route, status, message, headers) from exc
    failed = error_in_body(payload)
    if failed is not None:  # 200 with the provider's error: its status and words, as LiteLLM
        raise _provider_error(route, failed[0], failed[1], headers)
    text = answer_text(payload)
    prompt_tokens, completion_tokens, usage = token_counts(payload.get("usage"))
    cost = price(litellm, route.model, route.provider, usage)
    return WireAnswer(text, prompt_tokens, completion_tokens, cost)
