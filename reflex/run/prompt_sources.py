"""Prompts named by a URI (``prompts:/cat/3``, ``prompts:/cat@production``): which texts are one,
the plugin that reads them, and :func:`prompt_spec`, the builder's (any prompt, URIs included).

A starting prompt may live in a registry (MLflow's prompt registry: ``reflex_mlflow``). The core
never imports a registry client: a plugin registers a resolver for its scheme
(``register_prompt_sources``), and :func:`resolve_prompt_uri` asks it. A text is a URI only when
it is one line, without spaces, of the form ``scheme:/rest``, and its scheme is registered or is
``prompts`` (then the error says which plugin reads it); a prompt file's path never is one (a
path that exists is read as a file).
"""

from __future__ import annotations

import re
from pathlib import Path

from reflex.data import prompts
from reflex.data.prompts import PromptLike, PromptSpec
from reflex.errors import ConfigurationError

__all__ = ["REGISTRY_SCHEME", "prompt_spec", "prompt_uri", "resolve_prompt_uri"]

REGISTRY_SCHEME = "prompts"  # MLflow's prompt-registry URIs, read by reflex_mlflow
_URI = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*):/\S+$")


def prompt_uri(prompt: object) -> str | None:
    """``prompt`` as a registry URI, or None when it is a text, a file or anything else."""
    if isinstance(prompt, Path):
        if prompt.exists():
            return None
        text = str(prompt)
    elif isinstance(prompt, str):
        text = prompt.strip()
    else:
        return None
    match = _URI.match(text)
    if match is None:
        return None
    if match["scheme"] == REGISTRY_SCHEME or _resolver(match["scheme"]) is not None:
        return text
    return None


def _resolver(scheme: str) -> object:
    from reflex.plugins import get_registry

    return get_registry().prompt_source(scheme)


def prompt_spec(prompt: PromptLike) -> PromptSpec:
    """Any accepted prompt as a PromptSpec (:func:`reflex.data.prompts.prompt_spec`), a
    registry URI read by its plugin (its ``source``: the URI pinned to a version)."""
    uri = prompt_uri(prompt)
    if uri is None:
        return prompts.prompt_spec(prompt)
    resolved = resolve_prompt_uri(uri)
    if not isinstance(resolved, PromptSpec):
        raise ConfigurationError(f"{uri}: its plugin returned {type(resolved).__name__}")
    return prompts.prompt_spec(resolved)


def resolve_prompt_uri(uri: str) -> object:
    """The prompt ``uri`` names, read by its scheme's plugin: a PromptSpec (``source``: the
    pinned URI), which :func:`prompt_spec` checks."""
    from reflex.plugins import get_registry

    scheme = uri.split(":", 1)[0]
    resolve = get_registry().prompt_source(scheme)
    if resolve is None:
        raise ConfigurationError(
            f"{uri}: no plugin reads {scheme}:/ prompts; install MLflow's: "
            "pip install 'aevyra-reflex[mlflow]'"
        )
    return resolve(uri)
