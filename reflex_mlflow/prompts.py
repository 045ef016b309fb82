"""MLflow prompt-registry versions as reflex prompts, and back.

- :func:`template_spec`: an MLflow prompt template as a ``PromptSpec``, the one conversion:
  :func:`prompt_from_version` (a ``PromptVersion``: the CLI's ``prompts:/`` PROMPT,
  :func:`load_prompt`, ``promote``'s incumbent) and ``ReflexPromptOptimizer``'s
  :class:`reflex_mlflow.bridge.PromptForm` (the template ``optimize_prompts`` hands over, a chat
  prompt as the JSON of its message list) both go through it;
- :func:`load_prompt`: ``prompts:/name/version`` or ``prompts:/name@alias`` from a store, one
  line naming what is wrong when it cannot (unknown prompt, version or alias; no store set);
- :func:`registry_template`: a run's best prompt in the form to register it back.

A chat prompt (a list of messages) is a chat template with ``{{variables}}``. A text prompt with
``{{variables}}`` is what MLflow users send as the user message: a template of that one user
message. A text prompt without variables is a system prompt (the row's input is the user
message). The winner goes back in the form its source had: one user message as text, demos or a
system prompt as a chat list or a text as they are.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from reflex.api import ConfigurationError, PromptSpec, placeholders, saved_template
from reflex.api.tracking import chat_spec

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities.model_registry import PromptVersion

__all__ = [
    "chat_messages",
    "load_prompt",
    "parse_prompt_uri",
    "prompt_from_version",
    "registry_template",
    "set_default_tracking_uri",
    "template_spec",
    "tracking_uri_for",
]

_URI = re.compile(r"^prompts:/(?P<name>[^/@\s]+)(?:/(?P<version>\d+)|@(?P<alias>[^/@\s]+))$")
_DEFAULT_URI: list[str] = []  # --mlflow-tracking-uri of this command line (the CLI sets it)


def parse_prompt_uri(uri: str) -> tuple[str, str | None, str | None]:
    """``(name, version, alias)`` of ``prompts:/name/version`` or ``prompts:/name@alias``."""
    match = _URI.match(uri.strip())
    if match is None:
        raise ConfigurationError(
            f"{uri}: not a prompt URI; write prompts:/NAME/VERSION or prompts:/NAME@ALIAS"
        )
    return match["name"], match["version"], match["alias"]


def chat_messages(template: object) -> list[Any] | None:
    """``template``'s message list when it is a chat prompt: a list (checked by ``chat_spec``),
    or the JSON text of a list of objects (how ``optimize_prompts`` hands a chat prompt to an
    optimizer); None for a text prompt."""
    if isinstance(template, list):
        return template
    if not isinstance(template, str):
        return None
    try:
        data = json.loads(template)
    except ValueError:
        return None
    if isinstance(data, list) and data and all(isinstance(m, dict) for m in data):
        return data
    return None


def template_spec(template: object, where: str) -> PromptSpec:
    """An MLflow prompt template as a PromptSpec: a chat prompt (:func:`chat_messages`) is a
    chat template; a text with ``{{variables}}`` the template of one user message (what MLflow
    users send as the user message); a text without is a system prompt (the row's input is the
    user message). ``where`` names it in errors."""
    messages = chat_messages(template)
    if messages is not None:
        return chat_spec(messages, where)
    if not isinstance(template, str) or not template.strip():
        raise ConfigurationError(f"{where}: the registered prompt is empty")
    if placeholders(template):
        return chat_spec([{"role": "user", "content": template}], where)
    return PromptSpec.single(template.strip("\n"))


def prompt_from_version(version: PromptVersion) -> PromptSpec:
    """``version`` as a PromptSpec whose ``source`` pins it (``prompts:/name/N``)."""
    where = f"prompts:/{version.name}/{version.version}"
    return replace(template_spec(version.template, where), source=where)


def registry_template(best_prompt: str, text_source: bool) -> str | list[dict[str, str]]:
    """``best_prompt`` (a run's string form) as the template to register: a chat template's
    list (demos as fixed turns), its one user message as text when the source was a text
    prompt with variables, a system prompt as its text."""
    messages = saved_template(best_prompt)
    if messages is None:
        return best_prompt
    if text_source and len(messages) == 1 and messages[0]["role"] == "user":
        return messages[0]["content"]
    return messages


def set_default_tracking_uri(uri: str | None) -> None:
    """The store ``prompts:/`` PROMPTs are read from in this process (``--mlflow-tracking-uri``)."""
    _DEFAULT_URI[:] = [uri] if uri else []


def tracking_uri_for(what: str, given: str | None = None) -> str:
    """The store to read ``what`` from: ``given``, the command line's, ``MLFLOW_TRACKING_URI``
    or ``mlflow.set_tracking_uri``'s; none set is an error (MLflow's default would make an
    empty ./mlflow.db, where no prompt is)."""
    if given:
        return given
    if _DEFAULT_URI:
        return _DEFAULT_URI[0]
    import mlflow
    from mlflow.tracking._tracking_service import utils

    if os.environ.get("MLFLOW_TRACKING_URI") or utils._tracking_uri:
        return str(mlflow.get_tracking_uri())
    raise ConfigurationError(
        f"{what}: no MLflow store to read it from: pass --mlflow-tracking-uri URI or set "
        "MLFLOW_TRACKING_URI"
    )


def load_prompt(uri: str, tracking_uri: str | None = None) -> PromptSpec:
    """The prompt ``uri`` names in the store at ``tracking_uri`` (see :func:`tracking_uri_for`),
    as a PromptSpec to pass to ``PromptOptimizer.run``; its ``source`` is the pinned URI."""
    from reflex_mlflow.connection import check_reachable, shown

    name, version, alias = parse_prompt_uri(uri)
    store = tracking_uri_for(uri, tracking_uri)
    try:
        check_reachable(store)
    except ConnectionError as exc:
        raise ConfigurationError(f"{uri}: {exc}") from None
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=store)
    found = _lookup(client, name, version, alias, f"{uri} (store {shown(store)})")
    return prompt_from_version(found)


def _lookup(
    client: MlflowClient, name: str, version: str | None, alias: str | None, where: str
) -> PromptVersion:
    from mlflow.exceptions import MlflowException

    try:
        if client.get_prompt(name) is None:
            raise ConfigurationError(f"{where}: no prompt named {name!r} in the registry")
        if alias is not None:
            found: PromptVersion | None = client.get_prompt_version_by_alias(name, alias)
        else:
            found = client.get_prompt_version(name, str(version))
    except MlflowException as exc:
        what = f"alias @{alias}" if alias is not None else f"version {version}"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigurationError(f"{where}: prompt {name!r} has no {what} ({first})") from None
    if found is None:
        raise ConfigurationError(f"{where}: prompt {name!r} has no version {version}")
    return found
