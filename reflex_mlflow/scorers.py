"""Metrics both ways: a reflex metric as an MLflow scorer, an MLflow scorer as a reflex metric.

- :func:`as_scorer` wraps any reflex metric (``exact_match``, a judge, your own) as an
  ``mlflow.genai`` scorer: ``mlflow.genai.evaluate(data=..., scorers=[as_scorer(metric)])``.
  The row's ``inputs`` become the example's user message (its ``input`` field, its one field,
  else the inputs as JSON), ``expectations["expected_response"]`` its reference.
- :func:`scorer_metric` wraps any ``mlflow.genai`` scorer (a built-in such as ``RegexMatch`` or
  the ``Correctness`` judge, or a custom ``@scorer``) as a reflex metric; on the command line
  ``--metric mlflow:Correctness`` (options after commas go to the scorer:
  ``--metric mlflow:RegexMatch,pattern=^positive``; a custom scorer by its import path,
  ``--metric mlflow:my_module.my_scorer``). The scorer sees the row as ``mlflow.genai.evaluate``
  would show it: ``inputs`` (the row's input or variables), ``outputs`` (the answer),
  ``expectations`` (``expected_response``: the reference).

An MLflow judge calls its model through MLflow's own adapters, not through the run's client, so
its calls are neither cached nor limited by ``--max-workers``; they are counted honestly: the
tokens and cost MLflow reports on each verdict (``mlflow.assessment.judge*`` metadata) go into
the run's ledger under the judge role, one call per verdict (:attr:`Score.judge_usage`).
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Mapping
from typing import Any

from reflex.api import ConfigurationError, Example, Metric, Score

__all__ = ["ScorerMetric", "as_scorer", "load_scorer", "scorer_metric"]

EXPECTED = "expected_response"
_JUDGE_KEYS = {
    "prompt_tokens": "mlflow.assessment.judgeInputTokens",
    "completion_tokens": "mlflow.assessment.judgeOutputTokens",
    "cost": "mlflow.assessment.judgeCost",
}


def as_scorer(metric: Metric, *, name: str | None = None) -> Any:
    """``metric`` as an ``mlflow.genai`` scorer named ``name`` (default: the metric's name):
    its score the Feedback's value, its feedback text the rationale, a row it could not score
    a Feedback with the error."""
    from mlflow.entities import AssessmentError, Feedback
    from mlflow.genai.scorers import scorer

    def score(inputs: Any = None, outputs: Any = None, expectations: Any = None) -> Feedback:
        example = _example(inputs, expectations)
        if metric.requires_reference and example.ideal is None:
            error = AssessmentError(
                error_code="NO_REFERENCE",
                error_message=f"{metric.name} needs expectations['{EXPECTED}']",
            )
            return Feedback(error=error)
        verdict = metric.score(_text(outputs), example)
        if verdict.error is not None:
            return Feedback(error=AssessmentError("METRIC_ERROR", error_message=verdict.error))
        return Feedback(value=verdict.value, rationale=verdict.feedback or None)

    return scorer(name=name or metric.name)(score)


def _example(inputs: Any, expectations: Any) -> Example:
    expected = expectations.get(EXPECTED) if isinstance(expectations, Mapping) else expectations
    return Example(
        id=str(inputs.get("example_id", "row")) if isinstance(inputs, Mapping) else "row",
        messages=({"role": "user", "content": _input_text(inputs)},),
        ideal=None if expected is None else _text(expected),
    )


def _input_text(inputs: Any) -> str:
    if isinstance(inputs, Mapping):
        fields = {k: v for k, v in inputs.items() if k not in ("example_id", "model")}
        if "input" in fields:
            return _text(fields["input"])
        if len(fields) == 1:
            return _text(next(iter(fields.values())))
        return json.dumps(fields, ensure_ascii=False, default=str)
    return _text(inputs)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


class ScorerMetric:
    """An ``mlflow.genai`` scorer as a reflex metric, named as the scorer is (``correctness``).

    A Feedback of ``yes``/``no`` or a bool scores 1/0, a number in [0, 1] is the score; a
    Feedback with an error (or a value of another kind) is a row the metric could not score.
    Several Feedbacks from one scorer score their mean.
    """

    requires_reference = False  # a scorer that needs a reference says so in its Feedback

    def __init__(self, scorer: Any) -> None:
        self.scorer = scorer
        self.name = str(getattr(scorer, "name", None) or type(scorer).__name__)

    def score(self, output: str, example: Example) -> Score:
        inputs: dict[str, Any] = (
            dict(example.variables) if example.variables else {"input": example.input}
        )
        expectations = {EXPECTED: example.ideal} if example.ideal is not None else None
        try:
            value = self.scorer.run(inputs=inputs, outputs=output, expectations=expectations)
        except Exception as exc:  # noqa: BLE001 - a scorer's failure is a row it could not score
            return Score(0.0, error=f"{type(exc).__name__}: {exc}"[:500])
        return _verdict(value)


class NamedScorerMetric(ScorerMetric):
    """A scorer named on the command line (``mlflow:TARGET``): rebuilt from config.json."""

    def __init__(self, target: str, options: Mapping[str, Any]) -> None:
        super().__init__(load_scorer(target, options))
        self.target, self.options = target, dict(options)

    def to_config(self) -> dict[str, Any]:
        return {"name": "mlflow", "options": {"target": self.target, **self.options}}


def scorer_metric(scorer: Any) -> ScorerMetric:
    """An ``mlflow.genai`` scorer object (``Correctness()``, a ``@scorer`` function) as a reflex
    metric: ``PromptOptimizer().add_metric(scorer_metric(RegexMatch(pattern="^pos")))``."""
    if not callable(getattr(scorer, "run", None)):
        raise ConfigurationError(
            f"{scorer!r} is not an mlflow.genai scorer (no run method): pass a built-in such as "
            "Correctness() or a function decorated with @scorer"
        )
    return ScorerMetric(scorer)


def load_scorer(target: str, options: Mapping[str, Any] | None = None) -> Any:
    """``target``: a built-in scorer's class name in ``mlflow.genai.scorers``
    (``Correctness``, built with ``options``), or the import path of a scorer object or class
    (``my_module.my_scorer``)."""
    import mlflow.genai.scorers as builtins

    options = dict(options or {})
    module_name, _, attr = target.rpartition(".")
    try:
        found = getattr(importlib.import_module(module_name), attr) if module_name else None
    except ImportError as exc:
        raise ConfigurationError(
            f"--metric mlflow:{target}: cannot import {module_name}: {exc}"
        ) from None
    found = found if found is not None else getattr(builtins, target, None)
    if found is None:
        raise ConfigurationError(
            f"--metric mlflow:{target}: no such scorer in mlflow.genai.scorers (e.g. Correctness, "
            "RegexMatch, Safety); a custom @scorer goes by its import path, module.name"
        )
    if isinstance(found, type):
        try:
            found = found(**options)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"--metric mlflow:{target}: bad options {options}: {exc}"
            ) from None
    elif options:
        raise ConfigurationError(
            f"--metric mlflow:{target} is a scorer object: it takes no options"
        )
    return scorer_metric(found).scorer


def make_metric(target: str = "", **options: Any) -> Metric:
    """The ``mlflow`` metric factory: ``--metric mlflow:TARGET[,KEY=VALUE...]``."""
    if not target:
        raise ConfigurationError(
            "--metric mlflow needs a scorer: --metric mlflow:Correctness (or mlflow:module.name)"
        )
    return NamedScorerMetric(target, options)


def _verdict(value: Any) -> Score:
    feedbacks = value if isinstance(value, list) else [value]
    values, rationales, errors = [], [], []
    usage: dict[str, float] = {"calls": 0.0, "prompt_tokens": 0.0, "completion_tokens": 0.0}
    priced = True
    for feedback in feedbacks:
        priced = _add_usage(usage, feedback) and priced
        error = getattr(feedback, "error", None)
        if error is not None:
            errors.append(str(getattr(error, "error_message", None) or error))
            continue
        number = _number(getattr(feedback, "value", feedback))
        if number is None:
            errors.append(f"value {getattr(feedback, 'value', feedback)!r} is not a score")
            continue
        values.append(number)
        if getattr(feedback, "rationale", None):
            rationales.append(str(feedback.rationale))
    judged = usage if usage["calls"] else None
    if judged is not None and not priced:
        judged.pop("cost", None)  # a call MLflow did not price: the cost is unknown, not 0
    if errors or not values:
        return Score(0.0, error="; ".join(errors) or "no verdict", judge_usage=judged)
    return Score(
        sum(values) / len(values), feedback="\n".join(rationales) or None, judge_usage=judged
    )


def _number(value: Any) -> float | None:
    text = str(getattr(value, "value", value)).strip().lower()  # CategoricalRating -> "yes"
    if isinstance(value, bool) or text in ("yes", "no", "true", "false"):
        return 1.0 if text in ("yes", "true") else 0.0
    if isinstance(value, int | float) and not math.isnan(value) and 0.0 <= value <= 1.0:
        return float(value)
    return None


def _add_usage(usage: dict[str, float], feedback: Any) -> bool:
    """One judge call per verdict whose metadata reports MLflow's judge tokens or cost;
    whether its cost is known (a verdict with no call is)."""
    metadata = getattr(feedback, "metadata", None) or {}
    found = {k: metadata.get(key) for k, key in _JUDGE_KEYS.items() if key in metadata}
    if not found:
        return True
    usage["calls"] += 1
    for key, value in found.items():
        usage[key] = usage.get(key, 0.0) + float(value or 0)
    return found.get("cost") is not None
