"""JSON-shaped data, typed: what ``json.loads`` returns and what ``json.dumps`` is given.

``JSONValue`` is a parsed JSON document: reading one means narrowing it with ``isinstance``.
``JSONDict`` is a JSON object we build or have checked is an object. ``JSONLike`` is the
read-only (covariant) form for parameters, so a ``dict[str, str]`` or a tuple is accepted too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

__all__ = ["JSONDict", "JSONLike", "JSONScalar", "JSONValue"]

JSONScalar: TypeAlias = str | int | float | bool | None
JSONValue: TypeAlias = JSONScalar | list["JSONValue"] | dict[str, "JSONValue"]
JSONDict: TypeAlias = dict[str, JSONValue]
JSONLike: TypeAlias = JSONScalar | Sequence["JSONLike"] | Mapping[str, "JSONLike"]
