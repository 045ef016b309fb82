"""The body of a lean-transport request, as LiteLLM makes it (:mod:`reflex.models.wire`).

A :class:`Route` holds what LiteLLM decided once for a model spec; :func:`with_options` adds a
request's tools, tool choice and response format as LiteLLM's ``get_optional_params`` and the
provider's ``transform_request`` make them (vLLM's config drops ``strict`` and
``additionalProperties`` from tool schemas, for one), once per route and distinct options; and
:func:`sent_messages` sends a tool-call turn or a tool result as LiteLLM's ``completion`` does
(null fields dropped, ``tool_calls`` as JSON), text messages as they are.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import aiohttp

    from reflex.models.spec import ModelSpec

__all__ = ["PROBE", "Route", "body_params", "chat_config", "sent_messages", "with_options"]

PROBE: list[dict[str, str]] = [
    {"role": "system", "content": "probe-s"},
    {"role": "user", "content": "probe-u"},
]


@dataclasses.dataclass(frozen=True)
class Route:
    """Where and how one model spec's requests go: all of it decided by LiteLLM, once."""

    model: str  # the provider's model name (no ``provider/`` prefix)
    provider: str
    url: str
    headers: Mapping[str, str]
    params: Mapping[str, object]  # the request body without ``messages``
    timeout: float
    proxy: str | None = None  # from HTTP(S)_PROXY / NO_PROXY, as aiohttp's trust_env reads them
    proxy_auth: aiohttp.BasicAuth | None = None  # from the proxy URL's user:password
    decoding: Mapping[str, object] = dataclasses.field(default_factory=dict)  # what made params


def chat_config(model: str, provider: str) -> Any:
    """LiteLLM's chat config for the provider (request, headers, URL, error classes)."""
    from litellm.types.utils import LlmProviders
    from litellm.utils import ProviderConfigManager

    return ProviderConfigManager.get_provider_chat_config(model, LlmProviders(provider))


def body_params(
    config: Any, model: str, optional: Mapping[str, object], headers: Mapping[str, str]
) -> dict[str, object] | None:
    """The request body LiteLLM's provider config makes of ``optional``, less ``messages``
    (None: the provider rewrites messages, so LiteLLM must send them)."""
    body = config.transform_request(
        model, [dict(m) for m in PROBE], dict(optional), {}, dict(headers)
    )
    if body.get("messages") != PROBE or body.get("model") != model:
        return None  # the provider rewrites messages: LiteLLM must do it
    params = {name: value for name, value in body.items() if name != "messages"}
    merged = params.pop("extra_body", None) or {}  # sent inside the body, as the SDK does
    if not isinstance(merged, dict):
        return None
    params.update(merged)
    if params.get("stream") is False:  # what LiteLLM sends for a non-streaming call
        del params["stream"]
    return params


# (id of the route, the options as JSON) -> (that route, the body LiteLLM makes with them).
_WITH_OPTIONS: dict[tuple[int, str], tuple[Route, Mapping[str, object] | None]] = {}


def with_options(route: Route, spec: ModelSpec) -> Route | None:
    """``route`` carrying ``spec``'s tools, tool choice and response format as LiteLLM would
    send them (its ``get_optional_params`` and the provider's ``transform_request``: vLLM's
    drops ``strict`` and ``additionalProperties`` from tool schemas, for one), made once per
    route and distinct options; None: LiteLLM's full path sends them."""
    options = spec.request_options()
    if not options:
        return route
    try:
        blob = json.dumps(options, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return None
    key = (id(route), blob)
    found = _WITH_OPTIONS.get(key)
    if found is None or found[0] is not route:
        if len(_WITH_OPTIONS) > 4096:  # a row's own tools each: keep the memo bounded
            _WITH_OPTIONS.clear()
        try:
            params = _option_params(route, options)
        except Exception:  # noqa: BLE001 - e.g. a parameter the model refuses: LiteLLM's path
            params = None
        found = _WITH_OPTIONS[key] = (route, params)
    params = found[1]
    return None if params is None else dataclasses.replace(route, params=params)


def _option_params(route: Route, options: Mapping[str, object]) -> Mapping[str, object] | None:
    from litellm.utils import get_optional_params

    config = chat_config(route.model, route.provider)
    if config is None:
        return None
    chosen: dict[str, Any] = {**route.decoding, **options}
    optional = get_optional_params(model=route.model, custom_llm_provider=route.provider, **chosen)
    if optional.get("stream") or optional.get("extra_headers"):
        return None
    return body_params(config, route.model, optional, route.headers)


def sent_messages(
    route: Route, messages: Sequence[Mapping[str, object]]
) -> list[dict[str, object]]:
    """The messages as LiteLLM sends them: text messages as they are (the route's probe proved
    it), others (a tool-call turn, a tool result, a null content) through LiteLLM's own fixes
    (``validate_and_fix_openai_messages``: null fields dropped...) and the provider's config."""
    if all(isinstance(value, str) for message in messages for value in message.values()):
        return [dict(message) for message in messages]
    from litellm.utils import validate_and_fix_openai_messages

    fixed = validate_and_fix_openai_messages(json.loads(json.dumps(list(messages))))
    config = chat_config(route.model, route.provider)
    body = config.transform_request(route.model, fixed, {}, {}, dict(route.headers))
    sent: list[dict[str, object]] = body["messages"]
    return sent
