"""JSON value comparison shared by tool_call and json_match: string rules, numbers, nesting."""

from __future__ import annotations

import pytest

from reflex.errors import ConfigurationError
from reflex_metrics._values import Compare, is_number, show


def test_numbers_compare_by_value_and_a_boolean_is_never_a_number() -> None:
    same = Compare().same
    assert same(5, 5.0)
    assert not same(True, 1)
    assert not same(1, True)
    assert not same("5", 5)  # a number written as a string is a string
    assert is_number(2.5) and not is_number(False)


def test_tolerances_widen_the_number_match() -> None:
    assert not Compare().same(1.05, 1)
    assert Compare(abs_tol=0.1).same(1.05, 1)
    assert Compare(rel_tol=0.1).same(105, 100)


@pytest.mark.parametrize(
    ("rule", "got", "want", "expected"),
    [
        ("exact", "New York", "New York", True),
        ("exact", "new york", "New York", False),
        ("casefold", "  NEW   york ", "New York", True),
        ("casefold", "NewYork", "New York", False),
        ("bfcl", "new-york, u.s.a.", "New York USA", True),
        ("bfcl", "it's", 'it"s', True),
    ],
)
def test_string_rules(rule: str, got: str, want: str, expected: bool) -> None:
    assert Compare(strings=rule).same(got, want) is expected


def test_lists_and_objects_compare_element_by_element() -> None:
    same = Compare().same
    assert same({"a": [1, "X"]}, {"a": [1.0, "x"]})
    assert not same([1, 2], [1, 2, 3])
    assert not same({"a": 1}, {"a": 1, "b": 2})
    assert not same([1, 2], {"0": 1})
    assert same(None, None) and not same(None, False)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"strings": "fuzzy"}, "strings"),
        ({"abs_tol": -1.0}, "abs_tol"),
        ({"rel_tol": float("nan")}, "rel_tol"),
    ],
)
def test_bad_options_are_refused_naming_the_option(options: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        Compare(**options)  # type: ignore[arg-type]


def test_show_is_compact_json_clipped_to_one_line() -> None:
    assert show({"a": [1, "é"]}) == '{"a": [1, "é"]}'
    long = show({"a": "x" * 100}, limit=20)
    assert len(long) == 20 and long.endswith("...")
