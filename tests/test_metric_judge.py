"""llm_judge: the plugin module registers reflex's LLMJudge under that name."""

from __future__ import annotations

from collections.abc import Callable

from reflex.api import LLMJudge
from reflex.plugins import get_registry
from reflex_metrics import judge


def test_the_hook_registers_llm_judge_as_the_judge_class() -> None:
    registered: list[tuple[str, Callable[..., object]]] = []
    judge.register_metrics(register=lambda name, factory: registered.append((name, factory)))
    assert registered == [("llm_judge", LLMJudge)]


def test_llm_judge_by_name_is_a_label_free_judge_of_that_model() -> None:
    metric = get_registry().metric("llm_judge", model="fake/judge")
    assert isinstance(metric, LLMJudge)
    assert metric.name == "llm_judge" and metric.requires_reference is False
