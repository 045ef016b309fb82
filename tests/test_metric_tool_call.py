"""The tool_call metric: names, arguments against acceptable values, partial credit, feedback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reflex.config import metric_specs
from reflex.errors import ConfigurationError
from reflex.plugins import get_registry
from reflex.toolcalls import ToolCall, render_answer
from reflex.types import Example, Metric
from reflex_metrics.tool_call import ToolCallMatch

HYPOT = ToolCall("math.hypot", {"x": 4, "y": 5})


def ex(ideal: str | None, **metadata: Any) -> Example:
    return Example("e1", ({"role": "user", "content": "q"},), ideal=ideal, metadata=metadata)


def answer(*calls: ToolCall, content: str | None = None) -> str:
    return render_answer(content, calls)


def test_the_right_call_scores_1_and_a_prose_answer_0() -> None:
    metric, row = ToolCallMatch(), ex(answer(HYPOT))
    right = metric.score(answer(HYPOT), row)
    assert right.value == 1.0 and right.feedback is None
    assert right.objectives == {"format": 1.0, "function": 1.0, "exact": 1.0}
    prose = metric.score("The hypotenuse is sqrt(41).", row)
    assert prose.value == 0.0 and prose.objectives["format"] == 0.0
    assert prose.feedback == "answered in text, no tool call (expected a call to `math.hypot`)"


def test_a_call_written_as_text_is_named_as_such() -> None:
    text = '```json\n{"name": "math.hypot", "arguments": {"x": 4, "y": 5}}\n```'
    verdict = ToolCallMatch().score(text, ex(answer(HYPOT)))
    assert verdict.value == 0.0
    assert verdict.feedback is not None and "make it a tool call, not text" in verdict.feedback


def test_numbers_compare_by_value_and_strings_by_the_rule() -> None:
    row = ex(answer(ToolCall("weather", {"city": "New York", "days": 3})))
    same = answer(ToolCall("weather", {"city": "  new  YORK ", "days": 3.0}))
    assert ToolCallMatch().score(same, row).value == 1.0
    assert ToolCallMatch(strings="exact").score(same, row).value < 1.0
    bfcl = answer(ToolCall("weather", {"city": "new-york", "days": 3}))
    assert ToolCallMatch(strings="bfcl").score(bfcl, row).value == 1.0
    as_text = answer(ToolCall("weather", {"city": "New York", "days": "3"}))
    assert ToolCallMatch().score(as_text, row).value == pytest.approx(2 / 3)
    flag = ex(answer(ToolCall("f", {"on": 1})))
    assert ToolCallMatch().score(answer(ToolCall("f", {"on": True})), flag).value == 0.5


def test_partial_credit_and_feedback_name_each_argument() -> None:
    row = ex(answer(HYPOT))
    missing = ToolCallMatch().score(answer(ToolCall("math.hypot", {"x": 4})), row)
    assert missing.value == pytest.approx(2 / 3)
    assert missing.feedback == "called `math.hypot` with x=4; expected also y in [5]"
    wrong = ToolCallMatch().score(answer(ToolCall("math.hypot", {"x": 4, "y": 6, "z": 0})), row)
    assert wrong.value == pytest.approx(2 / 4)
    assert wrong.feedback == (
        "called `math.hypot` with x=4, y=6, z=0; y=6 is not acceptable (expected y in [5]); "
        "z is not an expected argument"
    )
    hidden = ToolCallMatch(show_expected=False).score(answer(ToolCall("math.hypot", {"y": 6})), row)
    assert (
        hidden.feedback is not None and "[5]" not in hidden.feedback and "4" not in hidden.feedback
    )
    other = ToolCallMatch().score(answer(ToolCall("math.sqrt", {"x": 4})), row)
    assert other.value == 0.0 and other.objectives["function"] == 0.0
    assert other.feedback == "called `math.sqrt` with x=4; expected a call to `math.hypot`"


def test_no_call_references_score_a_call_as_wrong() -> None:
    row = ex("Nothing to compute here.")
    assert ToolCallMatch().score("Sure, hello!", row).value == 1.0
    called = ToolCallMatch().score(answer(HYPOT), row)
    assert called.value == 0.0
    assert called.feedback == (
        "called `math.hypot` with x=4, y=5, but this request needs no tool call: answer in text"
    )


def test_bfcl_ground_truth_acceptable_values_and_optional_arguments() -> None:
    truth = [{"math.hypot": {"x": [4], "y": [5], "z": ["", 0]}}]
    row = ex(answer(HYPOT), ground_truth=truth)
    metric = ToolCallMatch()
    assert metric.score(answer(HYPOT), row).value == 1.0  # z may be left out
    assert metric.score(answer(ToolCall("math.hypot", {"x": 4, "y": 5, "z": 0})), row).value == 1
    bad = metric.score(answer(ToolCall("math.hypot", {"x": 4, "y": 5, "z": 2})), row)
    assert bad.value == pytest.approx(3 / 4)
    assert (
        bad.feedback is not None and 'z=2 is not acceptable (expected z in ["", 0])' in bad.feedback
    )
    several = ex(None, ground_truth=[{"area": {"unit": ["m", "metres"]}}])
    assert metric.score(answer(ToolCall("area", {"unit": "Metres"})), several).value == 1.0
    broken = metric.score(answer(HYPOT), ex(None, ground_truth={"math.hypot": {}}))
    assert broken.error is not None and "metadata.ground_truth must be a list" in broken.error


def test_bfcl_objects_hold_acceptable_values_per_key() -> None:
    truth = [
        {
            "find": {
                "conditions": [{"school": ["Bluebird HS", "Bluebird High School"], "n": ["", 1]}]
            }
        }
    ]
    row = ex(None, ground_truth=truth)
    metric = ToolCallMatch(strings="bfcl")
    good = answer(ToolCall("find", {"conditions": {"school": "bluebird high school"}}))
    assert metric.score(good, row).value == 1.0
    extra = answer(ToolCall("find", {"conditions": {"school": "Bluebird HS", "x": 1}}))
    assert metric.score(extra, row).value == 0.5


def test_every_converted_bfcl_row_scores_its_own_reference_1() -> None:
    from reflex.data.dataset import load_dataset

    root = Path(__file__).resolve().parents[1] / "examples" / "tool_calls"
    metric = ToolCallMatch(strings="bfcl")
    for name in ("dataset.jsonl", "multiple.jsonl"):
        rows = load_dataset(root / name)
        assert all(row.ideal and metric.score(row.ideal, row).value == 1.0 for row in rows)
        assert all(row.tools and "ground_truth" in row.metadata for row in rows)


def test_several_calls_are_matched_as_a_set_or_in_order() -> None:
    first, second = ToolCall("a", {"n": 1}), ToolCall("b", {"n": 2})
    row = ex(answer(first, second))
    assert ToolCallMatch().score(answer(second, first), row).value == 1.0
    assert ToolCallMatch(ordered=True).score(answer(second, first), row).value == 0.0
    one = ToolCallMatch().score(answer(first), row)
    assert one.value == 0.5 and one.feedback == "no call to `b`"
    extra = ToolCallMatch().score(answer(first, second, ToolCall("c")), row)
    assert extra.value == pytest.approx(2 / 3) and "also called `c`" in (extra.feedback or "")


def test_options_are_validated_and_rebuild_from_config() -> None:
    for bad in ({"strings": "loose"}, {"abs_tol": -1}, {"ordered": "yes"}):
        with pytest.raises(ConfigurationError):
            ToolCallMatch(**bad)
    metric = get_registry().metric("tool_call", strings="bfcl", rel_tol=0.01)
    assert isinstance(metric, Metric) and metric.name == "tool_call"
    [spec] = metric_specs([metric])
    rebuilt = get_registry().metric(spec.name, **spec.options)
    assert rebuilt.to_config() == metric.to_config()  # type: ignore[attr-defined]


_VALUES = st.one_of(st.integers(-1000, 1000), st.text(max_size=8), st.booleans())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text("abcxyz", min_size=1, max_size=4), _VALUES, max_size=4))
def test_any_call_scores_1_against_itself_and_within_0_and_1_otherwise(
    arguments: dict[str, Any],
) -> None:
    call = ToolCall("f", arguments)
    metric = ToolCallMatch(strings="exact")
    assert metric.score(answer(call), ex(answer(call))).value == 1.0
    other = metric.score(answer(ToolCall("f", {**arguments, "extra": 1})), ex(answer(call)))
    assert 0.0 < other.value < 1.0
