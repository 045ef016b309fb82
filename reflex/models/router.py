"""Calls spread over several deployments by a LiteLLM Router (``--router-config litellm.yaml``).

The config is the ``model_list`` YAML the LiteLLM proxy reads (``model_name`` + ``litellm_params``
+ ``model_info``, ``router_settings``; ``os.environ/NAME`` values are read from the environment).
A run's model named like a ``model_name`` (or ``router/<model_name>``) goes through the Router;
the run's one channel (cache, ledger, budgets, ``--max-workers``, our retry classification)
stays in front of it, so the Router itself never retries (``num_retries=0``).

LiteLLM's ``rpm`` is a per-minute counter, which lets a whole minute's calls burst into the
first seconds; providers enforce it per second. A :class:`Pacer` (a routing callback) spaces each
deployment's calls ``60 / rpm`` seconds apart and steers each call to the deployment free
soonest. With ``router_settings.redis_url`` (or ``redis_host``/``redis_port``) the spacing is
kept in Redis, next to the Router's own cooldowns and usage, so several processes and machines
share each deployment's limit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reflex.errors import ConfigurationError
from reflex.models.answers import MalformedAnswer, message_text
from reflex.models.body_limit import watching
from reflex.models.litellm_call import Completion, _cost, usage_of
from reflex.models.pacing import Pacing, install_pacer, local_pacing, redis_pacing

if TYPE_CHECKING:
    from reflex.models.spec import ModelSpec

__all__ = ["ModelRouter", "check_router", "load_router_config", "redis_url_of", "routed_name"]

PREFIX = "router/"
# Router settings we own: retries are ours (classified, counted, run-wide back-off).
_FORCED = {"num_retries": 0}


def _env(value: Any, where: str) -> Any:
    """``os.environ/NAME`` (the proxy's convention) replaced by the variable's value."""
    if isinstance(value, str) and value.startswith("os.environ/"):
        name = value.removeprefix("os.environ/")
        if name not in os.environ:
            raise ConfigurationError(f"{where}: environment variable {name} is not set; export it")
        return os.environ[name]
    if isinstance(value, Mapping):
        return {str(k): _env(v, where) for k, v in value.items()}
    if isinstance(value, list):
        return [_env(v, where) for v in value]
    return value


def load_router_config(source: str | Path | Mapping[str, object]) -> dict[str, Any]:
    """The Router config from a YAML file or a mapping, checked; errors name the bad entry."""
    where = str(source) if isinstance(source, (str, Path)) else "router config"
    data = _read_yaml(Path(source)) if isinstance(source, (str, Path)) else dict(source)
    models = data.get("model_list")
    if not isinstance(models, list) or not models:
        raise ConfigurationError(
            f"{where}: no model_list; write a list of deployments, each with model_name and "
            "litellm_params.model (the LiteLLM proxy's config format)"
        )
    for index, item in enumerate(models):
        params = item.get("litellm_params") if isinstance(item, Mapping) else None
        if not isinstance(params, Mapping) or not item.get("model_name") or not params.get("model"):
            raise ConfigurationError(
                f"{where}: model_list[{index}] needs model_name and litellm_params.model, "
                f"got keys {sorted(map(str, item)) if isinstance(item, Mapping) else item!r}"
            )
    models = _env(models, where)
    for index, item in enumerate(models):
        _check_limits(item, f"{where}: model_list[{index}] ({item['model_name']})")
    settings = data.get("router_settings") or {}
    if not isinstance(settings, Mapping):
        raise ConfigurationError(f"{where}: router_settings must be a mapping, got {settings!r}")
    return {"model_list": models, "router_settings": _env(dict(settings), where)}


def _check_limits(item: Mapping[str, Any], where: str) -> None:
    """``rpm`` / ``tpm`` (where LiteLLM and the pacing read them): positive finite numbers."""
    import math

    for part in (item, item["litellm_params"], item.get("model_info") or {}):
        if not isinstance(part, Mapping):
            raise ConfigurationError(f"{where}: model_info must be a mapping, got {part!r}")
        for name in ("rpm", "tpm"):
            value = part.get(name)
            if value is None:
                continue
            try:
                number = float(value)
            except (TypeError, ValueError, OverflowError):
                number = math.nan
            if isinstance(value, bool) or not (0 < number < math.inf):
                raise ConfigurationError(
                    f"{where}: {name} {value!r} is not a positive number (a limit per minute)"
                )


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml  # type: ignore[import-untyped]  # PyYAML (a LiteLLM dependency) has no stubs

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read router config {path}: {exc.strerror}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigurationError(f"{path}{line}: not valid YAML: {problem}") from exc
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path}: expected a mapping with model_list, got {data!r}")
    return data


def redis_url_of(settings: Mapping[str, object]) -> str | None:
    """The Redis the Router coordinates through (``redis_url`` or host/port/password)."""
    url = settings.get("redis_url")
    if url:
        return str(url)
    host = settings.get("redis_host")
    if not host:
        return None
    auth = f":{settings['redis_password']}@" if settings.get("redis_password") else ""
    return (
        f"redis://{auth}{host}:{settings.get('redis_port') or 6379}/{settings.get('redis_db') or 0}"
    )


def routed_name(model: str, config: str | Path | Mapping[str, object]) -> str:
    """``router/<model>`` when ``model`` (no provider) is a ``model_name`` of ``config``."""
    if "/" in model:
        return model
    names = {str(m["model_name"]) for m in load_router_config(config)["model_list"]}
    return PREFIX + model if model in names else model


def check_router(litellm: Any, config: Mapping[str, Any], where: str = "router config") -> None:
    """ConfigurationError (one line, the entry) for what the Router would refuse at its first
    call: an unknown ``router_settings`` key or ``routing_strategy``, a deployment whose
    provider LiteLLM does not know; StorageError for a ``redis_url`` nothing answers at."""
    import difflib
    import inspect

    from reflex.models import providers

    settings = config["router_settings"]
    known = set(inspect.signature(litellm.Router).parameters) - {"model_list"}
    for name in settings:
        if name not in known:
            close = difflib.get_close_matches(str(name), sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigurationError(
                f"{where}: router_settings.{name} is not a LiteLLM Router setting{hint}"
            )
    strategy = settings.get("routing_strategy")
    if strategy is not None and strategy not in _strategies():
        raise ConfigurationError(
            f"{where}: router_settings.routing_strategy {strategy!r} is not a LiteLLM routing "
            f"strategy; use one of {', '.join(sorted(_strategies()))}"
        )
    for index, item in enumerate(config["model_list"]):
        params = item["litellm_params"]
        model = str(params["model"])
        if providers.is_custom(model.partition("/")[0]):
            continue
        try:
            litellm.get_llm_provider(
                model=model,
                custom_llm_provider=params.get("custom_llm_provider"),
                api_base=params.get("api_base"),
            )
        except Exception:  # noqa: BLE001 - LiteLLM's BadRequestError: it cannot route this model
            raise ConfigurationError(
                f"{where}: model_list[{index}] ({item['model_name']}): litellm_params.model "
                f"{model!r} names no LiteLLM provider; write it as provider/model "
                "(https://docs.litellm.ai/docs/providers)"
            ) from None
    url = redis_url_of(settings)
    if url:
        ping_redis(url, f"{where}: router_settings redis")


def _strategies() -> set[str]:
    import typing

    from litellm.types.litellm_params import RoutingStrategyName
    from litellm.types.router import RoutingStrategy

    return {*typing.get_args(RoutingStrategyName), *(s.value for s in RoutingStrategy)}


def ping_redis(url: str, what: str) -> None:
    """One PING (5 s at most) to the Redis the Router and its pacing share; errors name it."""
    from reflex.errors import StorageError
    from reflex.redact import redact_url

    shown = redact_url(url)
    try:
        import redis
    except ImportError as exc:
        raise ConfigurationError(
            f"{what} needs the redis client: pip install 'aevyra-reflex[redis]'"
        ) from exc
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
    except (ValueError, TypeError) as exc:
        raise ConfigurationError(f"{what} {shown!r}: {exc}") from None
    try:
        client.ping()
    except (redis.RedisError, OSError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise StorageError(
            f"{what} {shown} is unavailable: {first}; start redis-server or remove redis_url "
            "(redis_host) from router_settings (pacing then stays in this process)"
        ) from None
    finally:
        client.close()


class ModelRouter:
    """One LiteLLM Router for a run's routed models (built on the first call, in its loop)."""

    def __init__(self, config: str | Path | Mapping[str, object]) -> None:
        self.config = load_router_config(config)
        self.names = {str(m["model_name"]) for m in self.config["model_list"]}
        self._router: Any = None
        self._pacing: Pacing | None = None
        self.where = str(config) if isinstance(config, (str, Path)) else "router config"

    def check(self, litellm: Any) -> None:
        """The whole config as the Router will read it, before any call (see check_router)."""
        check_router(litellm, self.config, self.where)

    def group(self, spec: ModelSpec) -> str | None:
        """The model group ``spec`` names, or None when it is not routed."""
        if spec.model in self.names:
            return spec.model
        if spec.model.startswith(PREFIX):
            name = spec.model.removeprefix(PREFIX)
            if name in self.names:
                return name
            raise ConfigurationError(
                f"model {spec.model!r}: no model_name {name!r} in the router config; "
                f"known: {', '.join(sorted(self.names))}"
            )
        return None

    def _build(self, litellm: Any) -> Any:
        if self._router is None:
            settings = {**self.config["router_settings"], **_FORCED}
            redis = redis_url_of(settings)
            self._pacing = redis_pacing(redis) if redis else local_pacing()
            known = set(litellm.model_cost)
            self._router = litellm.Router(model_list=self.config["model_list"], **settings)
            _forget_zero_prices(litellm, known)
            install_pacer(litellm, self._pacing, self._router.registry().deployments() or [])
        return self._router

    async def call(
        self,
        litellm: Any,
        spec: ModelSpec,
        messages: Sequence[Mapping[str, object]],
        attempt: int,
    ) -> Completion:
        """One attempt through the Router; the Completion names the deployment that served it."""
        group = self.group(spec)
        assert group is not None
        kwargs = {k: v for k, v in spec.call_kwargs().items() if k != "api_base"}
        router = self._build(litellm)
        with watching() as watch:  # the answer is read up to --max-response-mb
            try:
                response = await router.acompletion(model=group, messages=list(messages), **kwargs)
            except Exception as exc:
                if watch.tripped is not None:
                    raise watch.tripped from exc
                raise
        hidden = getattr(response, "_hidden_params", None) or {}
        served = hidden.get("model_id") or hidden.get("api_base")
        return completion_of(litellm, response, attempt, str(served) if served else None)


def completion_of(litellm: Any, response: Any, attempt: int, deployment: str | None) -> Completion:
    """A Router response as a :class:`Completion` (usage and cost read as ``call_once`` does)."""
    choices = getattr(response, "choices", None)
    message = getattr(choices[0], "message", None) if choices else None
    if message is None:
        raise MalformedAnswer("the provider's answer has no choices[0].message")
    text = message_text(message)
    prompt_tokens, completion_tokens = usage_of(response)
    return Completion(
        text,
        prompt_tokens,
        completion_tokens,
        _cost(litellm, response),
        cached=False,
        attempts=attempt,
        deployment=deployment,
    )


_COST_FIELDS = ("input_cost_per_token", "output_cost_per_token")


def _forget_zero_prices(litellm: Any, known: set[str]) -> None:
    """Drop the price entries a new ``litellm.Router`` registered for its deployments when
    they hold no price: LiteLLM then priced every call of such a model, routed or not and for
    the rest of the process, at $0 instead of leaving it unpriced (a false zero). Entries
    with a price (``model_info`` of the config) stay."""
    for key in set(litellm.model_cost) - known:
        entry = litellm.model_cost.get(key) or {}
        if not any(entry.get(name) for name in _COST_FIELDS):
            litellm.model_cost.pop(key, None)
