"""The json_match metric: parse, schema validity, field-level partial credit, feedback per field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reflex.config import metric_specs
from reflex.errors import ConfigurationError
from reflex.plugins import get_registry
from reflex.types import Example
from reflex_metrics.json_match import JsonMatch

QUANTITIES = [{"value": 2, "unit": "metre"}, {"value": 2000, "unit": "pound sterling"}]
SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"value": {"type": "number"}, "unit": {"type": "string"}},
        "required": ["value", "unit"],
        "additionalProperties": False,
    },
}


def ex(ideal: Any) -> Example:
    return Example("e1", ({"role": "user", "content": "q"},), ideal=json.dumps(ideal))


def score(output: Any, ideal: Any = QUANTITIES, **options: Any) -> Any:
    text = output if isinstance(output, str) else json.dumps(output)
    return JsonMatch(**options).score(text, ex(ideal))


def test_the_same_json_scores_1_whatever_the_order_of_list_elements() -> None:
    swapped = [{"unit": "pound sterling", "value": 2000.0}, {"value": 2, "unit": "metre"}]
    verdict = score(swapped)
    assert verdict.value == 1.0 and verdict.feedback is None
    assert verdict.objectives == {"parse": 1.0, "fields": 1.0, "exact": 1.0}
    assert score(swapped, lists="ordered").value == 0.0
    assert score([], []).value == 1.0
    assert score({"quantities": []}, {"quantities": []}).value == 1.0
    assert score({}, {"quantities": []}).value == 0.0  # a missing empty list still counts


@pytest.mark.parametrize(
    ("output", "value", "feedback"),
    [
        ([{"value": 2, "unit": "meter"}], 1 / 4, '$[0].unit: got "meter", expected "metre"'),
        (
            [{"value": 2, "unit": "metre"}, {"value": 2000, "unit": "pound sterling", "x": 1}],
            4 / 5,
            "$[1].x: unexpected key",
        ),
        ([{"value": 2}, *QUANTITIES[1:]], 3 / 4, "$[0].unit: missing"),
        ([*QUANTITIES, {"value": 1, "unit": "m"}], 4 / 6, '$[2]: unexpected element {"value"'),
        ({"value": 2}, 0.0, "$: expected a list, got"),
    ],
)
def test_field_level_partial_credit_and_feedback(output: Any, value: float, feedback: str) -> None:
    verdict = score(output)
    assert verdict.value == pytest.approx(value)
    assert verdict.feedback is not None and feedback in verdict.feedback, verdict.feedback


def test_numeric_tolerance_strings_and_extra_keys_are_options() -> None:
    near = [{"value": 2.01, "unit": "Metre"}, QUANTITIES[1]]
    assert score(near).value == pytest.approx(2 / 4)
    assert score(near, abs_tol=0.05, strings="casefold").value == 1.0
    extra = [{**QUANTITIES[0], "note": "x"}, QUANTITIES[1]]
    assert score(extra, extra_keys="ignore").value == 1.0
    assert score([{"value": "2", "unit": "metre"}], [{"value": 2, "unit": "metre"}]).value == 0.5
    assert score([{"value": True, "unit": "metre"}], [{"value": 1, "unit": "metre"}]).value == 0.5


def test_fenced_json_counts_only_when_the_option_says_so() -> None:
    fenced = "Here it is:\n```json\n" + json.dumps(QUANTITIES) + "\n```"
    refused = score(fenced)
    assert refused.value == 0.0 and refused.objectives["parse"] == 0.0
    assert refused.feedback == "the JSON is inside a ``` code fence; answer with the bare JSON only"
    assert score(fenced, fenced=True).value == 1.0
    prose = score("two metres and two thousand pounds")
    assert prose.value == 0.0 and (prose.feedback or "").startswith("the answer is not JSON")


def test_a_schema_invalid_answer_loses_credit_and_is_told_why(tmp_path: Path) -> None:
    bad = [{"value": "2", "unit": "metre"}, QUANTITIES[1]]
    verdict = score(bad, schema=SCHEMA)
    assert verdict.objectives["schema"] == 0.0
    assert verdict.value == pytest.approx(3 / 4 * 0.5)
    assert "schema: $[0].value: '2' is not of type 'number'" in (verdict.feedback or "")
    assert score(bad, schema=SCHEMA, schema_penalty=1.0).value == 0.0
    assert score(QUANTITIES, schema=SCHEMA).objectives["schema"] == 1.0
    response_format = {"type": "json_schema", "json_schema": {"name": "q", "schema": SCHEMA}}
    path = tmp_path / "format.json"
    path.write_text(json.dumps(response_format), encoding="utf-8")
    from_file = JsonMatch(schema=str(path))
    assert from_file.schema == SCHEMA
    assert from_file.score(json.dumps(bad), ex(QUANTITIES)).objectives["schema"] == 0.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"schema": {"type": "no-such-type"}}, "not valid JSON Schema"),
        ({"schema": {"type": "json_schema", "json_schema": {}}}, "json_schema.schema"),
        ({"schema": "/no/such/file.json"}, "not a readable JSON file"),
        ({"lists": "bag"}, "lists='bag'"),
        ({"schema_penalty": 2}, "schema_penalty"),
        ({"fenced": "yes"}, "fenced"),
    ],
)
def test_bad_options_are_one_clear_line(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        JsonMatch(**options)


def test_rebuilt_from_config_with_the_schema_by_content(tmp_path: Path) -> None:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA), encoding="utf-8")
    metric = get_registry().metric("json_match", schema=str(path), fenced=True)
    [spec] = metric_specs([metric])
    path.unlink()  # check/export rebuild it without the file
    rebuilt = get_registry().metric(spec.name, **spec.options)
    assert rebuilt.to_config() == metric.to_config() and spec.options["schema"] == SCHEMA  # type: ignore[attr-defined]


def test_an_unreadable_reference_is_an_error_not_a_zero() -> None:
    row = Example("e1", ({"role": "user", "content": "q"},), ideal="not json")
    assert JsonMatch().score("[]", row).error == "the reference is not JSON"


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-99, 99) | st.text("ab ", max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text("kq", max_size=2), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_JSON, st.randoms(use_true_random=False))
def test_any_json_scores_1_against_itself_and_its_lists_shuffled(value: Any, rng: Any) -> None:
    def shuffled(item: Any) -> Any:
        if isinstance(item, list):
            items = [shuffled(v) for v in item]
            rng.shuffle(items)
            return items
        if isinstance(item, dict):
            return {k: shuffled(v) for k, v in item.items()}
        return item

    # dumped here: score() takes a bare string as the answer text, not as a JSON string value
    assert score(json.dumps(value), value).value == 1.0
    assert score(json.dumps(shuffled(value)), value).value == 1.0
    assert 0.0 <= score({"other": value}, value).value <= 1.0
