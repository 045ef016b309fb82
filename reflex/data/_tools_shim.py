"""A stand-in for ``reflex.data.tool_schemas.check_tools`` (issue 31, written on branch
i-wire) with its exact signature, until that module is merged: then this file goes and
:mod:`reflex.data.tool_rows` imports the real one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reflex.errors import ConfigurationError

__all__ = ["check_tools"]


def check_tools(value: object, source: str) -> list[dict[str, Any]]:
    """``value`` as a list of OpenAI function schemas, or one line naming ``source``."""
    fix = "write a JSON list of {'type': 'function', 'function': {'name': ..., 'parameters': ...}}"
    if not isinstance(value, list) or not value:
        raise ConfigurationError(f"{source}: tools must be a non-empty list; {fix}")
    tools: list[dict[str, Any]] = []
    for i, tool in enumerate(value):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(tool, Mapping) or tool.get("type", "function") != "function":
            raise ConfigurationError(f"{source}: tools[{i}] is not a function schema; {fix}")
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise ConfigurationError(f"{source}: tools[{i}] has no function name; {fix}")
        parameters = function.get("parameters", {"type": "object"})
        if not isinstance(parameters, Mapping):
            raise ConfigurationError(f"{source}: tools[{i}].function.parameters is not an object")
        tools.append(dict(tool))
    return tools
