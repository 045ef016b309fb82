"""The scoring contracts (reflex/scoring.py): a Score's range, the Metric and ModelGradedMetric
protocols as the built-in metrics meet them, and the one object behind each name re-exported."""

from __future__ import annotations

import math

import pytest

from reflex import api, config, scoring, types
from reflex.judging.judge import LLMJudge
from reflex.result import Example
from reflex_metrics.exact_match import ExactMatch

ROW = Example("r1", ({"role": "user", "content": "2+2?"},), ideal="4")


@pytest.mark.parametrize("value", [0.0, 0.5, 1.0])
def test_a_score_in_the_unit_interval_is_kept(value: float) -> None:
    assert scoring.Score(value, feedback="ok").value == value


@pytest.mark.parametrize("value", [-0.01, 1.01, math.nan, math.inf])
def test_a_score_outside_the_unit_interval_is_refused_naming_the_value(value: float) -> None:
    with pytest.raises(ValueError, match=r"Score.value must be in \[0, 1\], got"):
        scoring.Score(value)


def test_a_plain_metric_is_a_metric_and_not_model_graded() -> None:
    metric = ExactMatch()
    assert isinstance(metric, scoring.Metric)
    assert not isinstance(metric, scoring.ModelGradedMetric)
    assert metric.score("4", ROW).value == 1.0 and metric.score("5", ROW).value == 0.0


def test_a_judge_is_a_model_graded_metric() -> None:
    judge = LLMJudge("fake/judge", criteria="Is the answer right?")
    assert isinstance(judge, scoring.Metric) and isinstance(judge, scoring.ModelGradedMetric)


CONTRACTS = ["JudgeCall", "Metric", "ModelGradedMetric", "Score"]
SPECS = ["ConfigurableMetric", "MetricSpec", "metric_specs"]  # how config.json rebuilds a metric


def test_the_module_lists_the_contracts_and_the_metric_specs() -> None:
    assert sorted(scoring.__all__) == sorted(CONTRACTS + SPECS)


@pytest.mark.parametrize("name", CONTRACTS)
def test_each_scoring_name_is_the_same_object_from_types_and_the_plugin_api(name: str) -> None:
    assert getattr(types, name) is getattr(scoring, name) is getattr(api, name)


@pytest.mark.parametrize("name", SPECS)
def test_the_metric_specs_are_the_same_objects_from_config(name: str) -> None:
    assert getattr(config, name) is getattr(scoring, name)
