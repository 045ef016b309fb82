"""Reading dataset lines: the fast JSON line parser equals json.loads, errors included."""

from __future__ import annotations

import json

import pytest

from reflex.data import readers


@pytest.mark.parametrize(
    "text",
    ['{"a": 1}\n', '  {"a": 1}\n', '{"a": 1}  \r\n', '{"a": NaN}', "[1, 2]\n", '"s"', "3\n"],
)
def test_line_parsing_matches_json_loads(text: str) -> None:
    assert json.dumps(readers._loads(text)) == json.dumps(json.loads(text))


@pytest.mark.parametrize("text", ['{"a": 1} {"b": 2}\n', '{"a": 1', "{'a': 1}\n", "\n"])
def test_line_errors_are_json_loads_errors(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as ours:
        readers._loads(text)
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(text)
    assert (ours.value.msg, ours.value.colno) == (theirs.value.msg, theirs.value.colno)
