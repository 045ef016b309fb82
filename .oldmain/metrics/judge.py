"""``llm_judge``: registers :class:`reflex.api.LLMJudge` as a metric.

``--metric llm_judge`` needs a model, so the CLI uses ``--judge provider/model`` instead; by name
from Python: ``add_metric("llm_judge", model="openai/gpt-4o-mini", criteria="rubric.json")``.
Before optimizing against a judge, measure it: ``aevyra-reflex judge-check`` (a core command).
"""

from __future__ import annotations

from reflex.api import LLMJudge, MetricRegistrar, hookimpl

__all__ = ["LLMJudge", "register_metrics"]


@hookimpl
def register_metrics(register: MetricRegistrar) -> None:
    register("llm_judge", LLMJudge)
