"""The reference metrics together: no feedback quotes the reference; each is registered by name.

Each metric's own behaviour is tested in tests/test_metric_<name>.py."""

from __future__ import annotations

import pytest

from reflex.plugins import get_registry
from reflex.types import Example, Metric
from reflex_metrics.bleu import SacreBleu
from reflex_metrics.chrf import SacreChrf
from reflex_metrics.contains import Contains
from reflex_metrics.exact_match import ExactMatch
from reflex_metrics.f1 import TokenF1
from reflex_metrics.numeric import NumericMatch
from reflex_metrics.rouge import RougeScore

SECRET = "Zanzibar"


def ex(ideal: str | None, text: str = "question") -> Example:
    return Example("e1", ({"role": "user", "content": text},), ideal=ideal)


def test_feedback_never_quotes_the_reference_by_default() -> None:
    output = "I am not sure, maybe Paris or somewhere else entirely"
    metrics: list[Metric] = [
        ExactMatch(),
        Contains(),
        TokenF1(),
        RougeScore(),
        NumericMatch(),
        SacreBleu(),
        SacreChrf(),
    ]
    for metric in metrics:
        verdict = metric.score(output, ex(f"{SECRET} 42"))
        assert verdict.value < 1.0, metric.name
        assert SECRET.lower() not in (verdict.feedback or "").lower(), metric.name


@pytest.mark.parametrize(
    "name", ["exact_match", "contains", "regex", "numeric", "f1", "rouge", "bleu", "chrf"]
)
def test_registered_by_name(name: str) -> None:
    metric = get_registry().metric(name)
    assert isinstance(metric, Metric) and metric.name == name
    assert metric.score("7", ex("7")).value == 1.0


def test_registered_with_options() -> None:
    assert get_registry().metric("length", max_words=3).name == "length"
    assert get_registry().metric("rouge", variant="rouge1").variant == "rouge1"  # type: ignore[attr-defined]
    judge = get_registry().metric("llm_judge", model="fake/judge")
    assert judge.name == "llm_judge" and judge.requires_reference is False
