"""The tools a request offers and the answer format it asks for, checked before any call.

One module checks both, for every source: a ``--tools`` / ``--response-format`` file, the
builder's ``set_tools`` / ``set_response_format``, and a dataset row's ``tools`` field. Each
problem is one :class:`~reflex.errors.ConfigurationError` line that names the source (a file, or
``file:line`` for a row) and what to do.

- tools: a JSON list of OpenAI function schemas, ``{"type": "function", "function": {"name",
  "description", "parameters"}}`` (a bare ``{"name", "parameters", ...}`` function is taken as
  that schema's ``function``). Names are unique non-empty strings; ``parameters`` is a JSON
  Schema of ``type`` ``object``, checked against its metaschema (``jsonschema``).
- response format: ``{"type": "json_object"}``, ``{"type": "text"}`` or ``{"type":
  "json_schema", "json_schema": {"name", "schema", "strict"?}}`` whose schema is valid JSON
  Schema; a file holding a bare JSON Schema (``{"type": "object", ...}``) is taken as that
  ``json_schema``'s schema, named ``answer``.
- tool choice: ``auto``, ``required``, ``none`` or the name of an offered function.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reflex.data.files import file_problem
from reflex.data.json_types import JSONDict, JSONValue
from reflex.errors import ConfigurationError

__all__ = [
    "TOOL_CHOICES",
    "check_response_format",
    "check_tool_choice",
    "check_tools",
    "read_json_file",
    "response_format_setting",
    "tools_setting",
]

TOOL_CHOICES = ("auto", "required", "none")
_FORMATS = ("json_object", "json_schema", "text")
_TOOLS_FIX = (
    'give a JSON list of function schemas, e.g. [{"type": "function", "function": {"name": '
    '"get_weather", "parameters": {"type": "object", "properties": {...}}}}]'
)


def read_json_file(path: str | Path, what: str) -> JSONValue:
    """The JSON value in ``path``; a missing or unreadable file, or invalid JSON (at
    ``file:line``), is one ConfigurationError line."""
    file = Path(path)
    problem = file_problem(file, f"{what} {file}")  # a FIFO would block the read forever
    if problem is not None:
        raise ConfigurationError(problem)
    try:
        text = file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{what} {file} cannot be read: {exc}") from None
    try:
        value: JSONValue = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(
            f"{file}:{exc.lineno}: the {what} is not valid JSON ({exc.msg}, column {exc.colno});"
            " fix the file"
        ) from None
    return value


def _schema_problem(schema: object) -> str | None:
    """Why ``schema`` is not a valid JSON Schema (None: it is one), in one line."""
    from jsonschema import exceptions, validators

    if not isinstance(schema, (Mapping, bool)):
        return f"is a {type(schema).__name__}, not a JSON Schema object"
    try:
        validators.validator_for(schema).check_schema(schema)
    except exceptions.SchemaError as exc:
        where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in exc.absolute_path)
        message = " ".join(str(exc.message).split())
        if len(message) > 160:
            message = message[:157] + "..."
        return f"is not valid JSON Schema: {where.lstrip('.') or 'the schema'}: {message}"
    except Exception as exc:  # noqa: BLE001 - e.g. an unknown $schema URL
        return f"is not valid JSON Schema: {' '.join(str(exc).split())[:160]}"
    return None


def _function(entry: object, where: str, source: str) -> JSONDict:
    if not isinstance(entry, Mapping):
        raise ConfigurationError(
            f"{source}: {where} is not a function schema (a {type(entry).__name__}); {_TOOLS_FIX}"
        )
    if "function" in entry or ("type" in entry and "name" not in entry):
        if entry.get("type", "function") != "function":
            raise ConfigurationError(
                f"{source}: {where}.type is {entry.get('type')!r}; only function tools can be "
                'offered ("type": "function")'
            )
        function = entry.get("function")
        where = f"{where}.function"
    else:
        function = entry  # the bare function form (OpenAI's legacy "functions", BFCL)
    if not isinstance(function, Mapping):
        raise ConfigurationError(f"{source}: {where} is not an object; {_TOOLS_FIX}")
    name = function.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError(
            f"{source}: {where}.name is {name!r}; every function needs a non-empty name"
        )
    described = function.get("description")
    if described is not None and not isinstance(described, str):
        raise ConfigurationError(f"{source}: {where}.description of {name!r} must be a string")
    parameters = function.get("parameters")
    if parameters is not None:
        problem = _schema_problem(parameters)
        if problem is None and isinstance(parameters, Mapping):
            kind = parameters.get("type", "object")
            if kind != "object":
                problem = f"has type {kind!r}; a function's parameters are a JSON Schema object"
        if problem is not None:
            raise ConfigurationError(
                f"{source}: {where}.parameters of {name!r} {problem}; fix the schema"
            )
    plain: JSONDict = json.loads(json.dumps(dict(function)))  # plain JSON values, a copy
    return plain


def check_tools(value: object, source: str) -> list[JSONDict]:
    """``value`` as a list of OpenAI tool schemas (``{"type": "function", "function": ...}``).

    ``source`` names where it came from (a file, ``file:line``, ``set_tools``) in the error.
    """
    if isinstance(value, Mapping) and isinstance(value.get("tools"), list):
        value = value["tools"]  # {"tools": [...]}, as a request body holds them
    if not isinstance(value, list):
        shown = type(value).__name__
        raise ConfigurationError(f"{source}: the tools are a {shown}, not a list; {_TOOLS_FIX}")
    if not value:
        raise ConfigurationError(f"{source}: the list of tools is empty; {_TOOLS_FIX}")
    tools: list[JSONDict] = []
    seen: set[object] = set()  # function names (strings: _function checked them)
    entries: list[object] = value
    for i, entry in enumerate(entries):
        function = _function(entry, f"tools[{i}]", source)
        if function["name"] in seen:
            raise ConfigurationError(
                f"{source}: tools[{i}] repeats the function name {function['name']!r}; each "
                "function is offered once"
            )
        seen.add(function["name"])
        tools.append({"type": "function", "function": function})
    return tools


def check_response_format(value: object, source: str) -> JSONDict:
    """``value`` as an OpenAI ``response_format`` (json_object, json_schema or text)."""
    fix = (
        'give {"type": "json_object"} or {"type": "json_schema", "json_schema": {"name": ..., '
        '"schema": {...}}}'
    )
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"{source}: the response format is a {type(value).__name__}, not an object; {fix}"
        )
    kind = value.get("type")
    if kind not in _FORMATS:
        if "properties" in value or kind in ("object", "array") or "$schema" in value:
            value = {"type": "json_schema", "json_schema": {"name": "answer", "schema": value}}
            kind = "json_schema"
        else:
            raise ConfigurationError(
                f"{source}: the response format's type is {kind!r}, not one of "
                f"{', '.join(_FORMATS)}; {fix}"
            )
    if kind != "json_schema":
        return {"type": kind}
    spec = value.get("json_schema")
    if not isinstance(spec, Mapping) or "schema" not in spec:
        raise ConfigurationError(
            f"{source}: a json_schema response format needs json_schema.schema; {fix}"
        )
    name = spec.get("name", "answer")
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError(f"{source}: json_schema.name is {name!r}; give a non-empty name")
    problem = _schema_problem(spec["schema"])
    if problem is not None:
        raise ConfigurationError(f"{source}: json_schema.schema {problem}; fix the schema")
    if "strict" in spec and not isinstance(spec["strict"], bool):
        raise ConfigurationError(f"{source}: json_schema.strict must be true or false")
    plain: JSONDict = json.loads(json.dumps({**dict(spec), "name": name}))
    return {"type": "json_schema", "json_schema": plain}


def check_tool_choice(
    value: object, tools: Sequence[Mapping[str, Any]] | None, source: str
) -> str | dict[str, Any] | None:
    """``value`` as an OpenAI ``tool_choice``: ``auto`` / ``required`` / ``none``, or a function
    name (or ``{"type": "function", "function": {"name": ...}}``) that ``tools`` offers (when
    ``tools`` is None, the rows offer theirs: the name is not checked here)."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() in TOOL_CHOICES:
        return value.strip().lower()
    if isinstance(value, Mapping):
        function = value.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
    else:
        name = value if isinstance(value, str) else None
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError(
            f"{source}: tool choice {value!r} is not auto, required, none or a function name"
        )
    names = [str(t.get("function", {}).get("name")) for t in tools or ()]
    if tools is not None and name not in names:
        offered = ", ".join(names) or "none"
        raise ConfigurationError(
            f"{source}: tool choice {name!r} names no offered function (offered: {offered}); "
            "use auto, required, none or one of those names"
        )
    return {"type": "function", "function": {"name": name}}


def tools_setting(
    value: str | Path | Sequence[Mapping[str, object]], source: str
) -> list[JSONDict]:
    """The tools of a run: a JSON file (``--tools FILE``, a path given to ``set_tools``) or
    the list itself, checked (``source`` names the caller when no file is given)."""
    if isinstance(value, (str, Path)):
        data = read_json_file(value, "tools file")
        with _at_line(value, data):
            return check_tools(data, str(value))
    return check_tools(list(value) if isinstance(value, tuple) else value, source)


def response_format_setting(value: str | Path | Mapping[str, object], source: str) -> JSONDict:
    """The response format of a run: a JSON file (``--response-format FILE``) or the mapping."""
    if isinstance(value, (str, Path)):
        data = read_json_file(value, "response format file")
        with _at_line(value, data):
            return check_response_format(data, str(value))
    return check_response_format(value, source)


_TOKEN = re.compile(r"^([A-Za-z_][\w-]*(?:\[\d+\]|\.[\w-]+)*)[ :]")
_SEGMENT = re.compile(r"\[(\d+)\]|\.?([\w-]+)")
_INNER = re.compile(r"is not valid JSON Schema: ([\w.\[\]-]+): ")


def _segments(text: str) -> list[str | int]:
    return [int(i) if i else key for i, key in _SEGMENT.findall(text)]


def _problem_path(message: str, data: object) -> list[str | int]:
    """Where in the file's JSON a check's message points (``tools[2].function.parameters``,
    ``json_schema.schema`` and the schema's own place); [] for the whole value."""
    token = _TOKEN.match(message)
    path = _segments(token.group(1)) if token else []
    if path[:1] == ["tools"] and isinstance(data, list):
        path = path[1:]  # the file is the list itself
    if path[:2] == ["json_schema", "schema"] and isinstance(data, Mapping):
        if "json_schema" not in data:
            path = path[2:]  # a bare JSON Schema file: the schema is the whole value
        inner = _INNER.search(message)
        if inner and inner.group(1) != "the":
            path += _segments(inner.group(1))
    if message.startswith("the response format's type"):
        path = ["type"]
    return path


def _line_at(text: str, path: Sequence[str | int]) -> int:
    """The 1-based line where the value at ``path`` starts in the JSON ``text`` (as deep as
    the path exists)."""
    decoder = json.JSONDecoder()
    pos = _skip(text, 0)
    for step in path:
        found = _child(text, pos, step, decoder)
        if found is None:
            break
        pos = found
    return text.count("\n", 0, pos) + 1


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n\ufeff":
        pos += 1
    return pos


def _child(text: str, pos: int, step: str | int, decoder: json.JSONDecoder) -> int | None:
    """The start of the member ``step`` of the object or array starting at ``pos``."""
    opening = text[pos : pos + 1]
    if opening not in ("{", "[") or isinstance(step, int) != (opening == "["):
        return None
    pos, index = _skip(text, pos + 1), 0
    while pos < len(text) and text[pos] not in "}]":
        key: object = index
        if opening == "{":
            key, pos = decoder.raw_decode(text, pos)
            pos = _skip(text, _skip(text, pos) + 1)  # past the colon
        if key == step:
            return pos
        _, pos = decoder.raw_decode(text, pos)
        pos = _skip(text, pos)
        if text[pos : pos + 1] == ",":
            pos = _skip(text, pos + 1)
        index += 1
    return None


@contextmanager
def _at_line(path: str | Path, data: object) -> Iterator[None]:
    """A check's error about the file ``path`` names the line of the bad value:
    ``tools.json:7: tools[1].function.parameters of 'f' ...``."""
    try:
        yield
    except ConfigurationError as exc:
        prefix = f"{path}: "
        message = str(exc)
        if not message.startswith(prefix):
            raise
        rest = message[len(prefix) :]
        try:
            text = Path(path).read_text(encoding="utf-8-sig")
            line = _line_at(text, _problem_path(rest, data))
        except (OSError, UnicodeDecodeError, ValueError):
            raise exc from None
        raise ConfigurationError(f"{path}:{line}: {rest}") from None
