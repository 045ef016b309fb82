"""Prompt x examples -> per-example outputs, per-metric scores and feedback.

``render_messages`` is the one place that decides how the prompt enters the conversation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Literal

from reflex.providers import ModelSpec, ProviderClient
from reflex.result import EvalSnapshot, Sample
from reflex.types import Example, Metric, Score

__all__ = ["PromptMode", "Evaluator", "combine_scores", "render_messages"]

PromptMode = Literal["replace", "prepend"]
Progress = Callable[[int], None]


def render_messages(
    prompt: str, example: Example, mode: PromptMode = "replace"
) -> list[dict[str, str]]:
    """The conversation sent to the task model for ``example`` under ``prompt``.

    The prompt is the system message. If the example carries its own system message, ``replace``
    swaps it for the prompt and ``prepend`` puts the prompt before its text.
    """
    messages = [dict(m) for m in example.messages]
    if messages and messages[0].get("role") == "system":
        if mode == "prepend":
            messages[0]["content"] = f"{prompt}\n\n{messages[0].get('content', '')}"
        else:
            messages[0]["content"] = prompt
        return messages
    return [{"role": "system", "content": prompt}, *messages]


def combine_scores(scores: Mapping[str, float], weights: Mapping[str, float]) -> float | None:
    """Weighted mean of the metric scores that applied; None when none applied."""
    total = sum(weights.get(name, 1.0) for name in scores)
    if not scores or total <= 0:
        return None
    return sum(value * weights.get(name, 1.0) for name, value in scores.items()) / total


@dataclass
class Evaluator:
    """Runs a prompt over examples on every task model and scores the outputs."""

    client: ProviderClient
    models: Sequence[ModelSpec]
    metrics: Sequence[Metric]
    weights: Mapping[str, float]
    prompt_mode: PromptMode = "replace"

    async def evaluate(
        self, prompt: str, examples: Sequence[Example], split: str, progress: Progress | None = None
    ) -> EvalSnapshot:
        async def one(spec: ModelSpec, example: Example) -> Sample:
            sample = await self._sample(prompt, spec, example)
            if progress is not None:
                progress(1)
            return sample

        tasks = [one(spec, ex) for spec in self.models for ex in examples]
        samples = tuple(await asyncio.gather(*tasks))
        return self._snapshot(prompt, split, samples, examples)

    async def _sample(self, prompt: str, spec: ModelSpec, example: Example) -> Sample:
        completion = await self.client.complete(
            spec, render_messages(prompt, example, self.prompt_mode)
        )
        scores: dict[str, float] = {}
        feedback: dict[str, str] = {}
        objectives: dict[str, float] = {}
        errors: list[str] = []
        for metric in self.metrics:
            if metric.requires_reference and example.ideal is None:
                continue
            verdict: Score = metric.score(completion.text, example)
            if verdict.error is not None:
                errors.append(f"{metric.name}: {verdict.error}")
                continue
            scores[metric.name] = verdict.value
            if verdict.feedback:
                feedback[metric.name] = verdict.feedback
            objectives.update({f"{metric.name}.{k}": v for k, v in verdict.objectives.items()})
        combined = None if errors else combine_scores(scores, self.weights)
        return Sample(
            example_id=example.id,
            model=spec.model,
            output=completion.text,
            score=combined,
            scores=scores,
            feedback=feedback,
            objectives=objectives,
            error="; ".join(errors) or None,
            cached=completion.cached,
        )

    def _snapshot(
        self, prompt: str, split: str, samples: tuple[Sample, ...], examples: Sequence[Example]
    ) -> EvalSnapshot:
        scored = [s.score for s in samples if s.score is not None]
        by_metric: dict[str, float] = {}
        skipped: dict[str, int] = {}
        for metric in self.metrics:
            values = [s.scores[metric.name] for s in samples if metric.name in s.scores]
            if values:
                by_metric[metric.name] = fmean(values)
            if metric.requires_reference:
                missing = sum(1 for ex in examples if ex.ideal is None) * len(self.models)
                if missing:
                    skipped[metric.name] = missing
        return EvalSnapshot(
            system_prompt=prompt,
            split=split,
            mean_score=fmean(scored) if scored else 0.0,
            scores_by_metric=by_metric,
            samples=samples,
            n_errors=sum(1 for s in samples if s.error is not None),
            n_skipped=skipped,
        )
