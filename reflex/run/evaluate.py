"""Prompt x examples -> per-example outputs, per-metric scores and feedback.

``render_messages`` is the one place that decides how the prompt enters the conversation.
In pipeline mode (:mod:`reflex.data.pipeline`) the user's pipeline replaces the one task-model call.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import fmean
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from reflex.config import BaseRunConfig
from reflex.data.demos import prompt_messages
from reflex.data.tool_text import described_tools
from reflex.models.client import ModelSpec, ProviderClient
from reflex.result import EvalSnapshot, Sample
from reflex.types import Example, JudgeCall, Metric, ModelGradedMetric, Score

if TYPE_CHECKING:
    from reflex.run.pipeline_runner import PipelineOutcome, PipelineRunner

__all__ = [
    "PromptMode",
    "Evaluator",
    "SliceRow",
    "combine_scores",
    "render_messages",
    "slice_scores",
]

PromptMode = Literal["replace", "prepend"]
Progress = Callable[[int], None]


def render_messages(
    prompt: str, example: Example, mode: PromptMode = "replace"
) -> list[dict[str, Any]]:
    """The conversation sent to the task model for ``example`` under ``prompt`` (a chat
    template is rendered with the row's variables).

    See :func:`reflex.data.demos.prompt_messages` (public as ``reflex.prompt_messages``).
    """
    return prompt_messages(prompt, example, mode)


def task_spec(config: BaseRunConfig, model: str) -> ModelSpec:
    """How the task model ``model`` is called: the run's decoding settings, and the tools,
    tool choice and response format every request carries (a row's own tools replace the
    run's: :func:`request_for`)."""
    return ModelSpec(
        model=model,
        api_base=config.api_base,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        seed=config.seed,
        tools=tuple(config.tools or ()),
        tool_choice=config.tool_choice,
        response_format=config.response_format,
    )


def request_for(
    spec: ModelSpec, prompt: str, example: Example, mode: PromptMode = "replace"
) -> tuple[ModelSpec, list[dict[str, str]]]:
    """The task request for ``example``: the spec with the example's tools (else the run's),
    and the conversation :func:`render_messages` makes. Evaluations, budget estimates and the
    gate's counts all use it, so they agree on what each call (and its cache key) is. A prompt
    led by a ``<tools>`` section sends its descriptions (:func:`described_tools`)."""
    spec = spec.with_tools(example.tools)
    described = described_tools(spec.tools, prompt) if spec.tools else None
    if described is not None:
        spec = replace(spec, tools=tuple(described))
    return spec, render_messages(prompt, example, mode)


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
    pipeline: PipelineRunner | None = None

    async def evaluate(
        self, prompt: str, examples: Sequence[Example], split: str, progress: Progress | None = None
    ) -> EvalSnapshot:
        async def one(spec: ModelSpec, example: Example) -> Sample:
            sample = await self._sample(prompt, spec, example)
            if progress is not None:
                progress(1)
            return sample

        tasks: list[asyncio.Future[Sample]] = []
        try:
            for spec, example in [(spec, ex) for spec in self.models for ex in examples]:
                tasks.append(asyncio.ensure_future(one(spec, example)))
                if len(tasks) <= self.client.max_workers:
                    # Let this call reach the wire before the next one is started. aiohttp
                    # writes a request from a task of its own, queued behind every task ready
                    # then: started all at once, no request of the first round left before
                    # each row had taken its first step (~0.1 s per 500 rows, C = 64).
                    await asyncio.sleep(0)
            samples = tuple(await asyncio.gather(*tasks))
        except BaseException:
            # A permanent failure (or Ctrl-C) stops the run at once: without this, the other
            # calls would go on paying in the background after the run has ended.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return self._snapshot(prompt, split, samples, examples)

    async def _sample(self, prompt: str, spec: ModelSpec, example: Example) -> Sample:
        if self.pipeline is not None:
            outcome = await self.pipeline.run(prompt, spec, example)
            if outcome.error is not None:
                return self._failed_run(example, spec.model, outcome)
            sample = await self._scored(example, spec.model, outcome.output, outcome)
            return replace(sample, trace=outcome.trace)
        started = time.monotonic()
        completion = await self.client.complete(
            *request_for(spec, prompt, example, self.prompt_mode)
        )
        latency_ms = round((time.monotonic() - started) * 1000, 3)
        sample = await self._scored(example, spec.model, completion.text, completion.cached)
        return replace(
            sample,
            latency_ms=latency_ms,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
        )

    async def _scored(
        self, example: Example, model: str, output: str, source: bool | PipelineOutcome
    ) -> Sample:
        """Score ``output``; ``source`` is a pipeline's outcome, or whether the call was cached."""
        scores: dict[str, float] = {}
        feedback: dict[str, str] = {}
        objectives: dict[str, float] = {}
        errors: list[str] = []
        failed: list[str] = []
        for metric in self.metrics:
            if metric.requires_reference and example.ideal is None:
                continue
            text = output
            if not isinstance(source, bool) and self._scores_trace(metric):
                text = source.scored_text()
            verdict = await self._score(metric, text, example)
            if verdict.judge_usage:
                self._count_judge(verdict.judge_usage)
            if verdict.error is not None:
                errors.append(f"{metric.name}: {verdict.error}")
                failed.append(metric.name)
                continue
            scores[metric.name] = verdict.value
            if verdict.feedback:
                feedback[metric.name] = verdict.feedback
            objectives.update({f"{metric.name}.{k}": v for k, v in verdict.objectives.items()})
        combined = None if errors else combine_scores(scores, self.weights)
        return Sample(
            example_id=example.id,
            model=model,
            output=output,
            score=combined,
            scores=scores,
            feedback=feedback,
            objectives=objectives,
            error="; ".join(errors) or None,
            cached=source if isinstance(source, bool) else source.cached,
            failed_metrics=failed,
        )

    def _count_judge(self, usage: Mapping[str, float]) -> None:
        """A metric's own judge calls into the run's ledger (the tokens and cost on the first)."""
        cost = usage.get("cost")
        for call in range(int(usage.get("calls", 0))):
            first = call == 0
            self.client.ledger.add_call(
                "judge",
                int(usage.get("prompt_tokens", 0)) if first else 0,
                int(usage.get("completion_tokens", 0)) if first else 0,
                (cost if first else 0.0) if cost is not None else None,
            )

    def _scores_trace(self, metric: Metric) -> bool:
        return self.pipeline is not None and self.pipeline.scores_trace(metric)

    def _failed_run(self, example: Example, model: str, outcome: PipelineOutcome) -> Sample:
        """A pipeline that failed on ``example`` scores 0 on each metric that applies to it.

        The candidate prompt is responsible for what its pipeline does (an unparseable step,
        a hang), so the failure counts against it instead of being left out of the mean.
        """
        reason = f"pipeline failed: {outcome.error}"
        applies = [
            m.name for m in self.metrics if not (m.requires_reference and example.ideal is None)
        ]
        scores = dict.fromkeys(applies, 0.0)
        return Sample(
            example_id=example.id,
            model=model,
            output=outcome.output,
            score=combine_scores(scores, self.weights),
            scores=scores,
            feedback=dict.fromkeys(applies, reason),
            error=reason,
            cached=outcome.cached,
            trace=outcome.trace,
        )

    @functools.cached_property
    def _graded(self) -> dict[int, tuple[Metric, bool]]:
        """Whether each metric seen is model-graded, by id (with the metric, so a reused id
        is not taken for it): a runtime protocol check costs ~20 us, so it is made once per
        evaluator and metric rather than once per row (on the event loop)."""
        return {}

    def _is_graded(self, metric: Metric) -> bool:
        seen = self._graded.get(id(metric))
        if seen is None or seen[0] is not metric:
            seen = self._graded[id(metric)] = (metric, isinstance(metric, ModelGradedMetric))
        return seen[1]

    async def _score(self, metric: Metric, output: str, example: Example) -> Score:
        if self._is_graded(metric):
            graded = cast(ModelGradedMetric, metric)
            return await graded.ascore(output, example, self._judge_call(graded))
        return metric.score(output, example)

    def _judge_call(self, metric: ModelGradedMetric) -> JudgeCall:
        # Judge calls take the task calls' road: same client, cache, ledger and concurrency.
        async def call(messages: Sequence[Mapping[str, str]]) -> str:
            completion = await self.client.complete(metric.judge, messages, role="judge")
            return completion.text

        return call

    def _snapshot(
        self, prompt: str, split: str, samples: tuple[Sample, ...], examples: Sequence[Example]
    ) -> EvalSnapshot:
        scored = [s.score for s in samples if s.score is not None]
        by_metric: dict[str, float] = {}
        skipped: dict[str, int] = {}
        failed: dict[str, int] = {}
        for metric in self.metrics:
            values = [s.scores[metric.name] for s in samples if metric.name in s.scores]
            if values:
                by_metric[metric.name] = fmean(values)
            n_failed = sum(1 for s in samples if metric.name in s.failed_metrics)
            if n_failed:
                failed[metric.name] = n_failed
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
            n_failed=failed,
            model_graded=any(isinstance(m, ModelGradedMetric) for m in self.metrics),
        )


class SliceRow(TypedDict):
    """One group of :func:`slice_scores`: rows measured, mean score before and after, change."""

    n: int
    baseline: float | None
    final: float | None
    change: float | None


def slice_scores(
    examples: Iterable[Example],
    baseline: EvalSnapshot | None,
    final: EvalSnapshot | None,
    keys: Sequence[str],
) -> dict[str, dict[str, SliceRow]]:
    """Per-group mean scores by metadata key, baseline vs final.

    ``{key: {group: {"n", "baseline", "final", "change"}}}`` over the rows the snapshots measured
    (``n`` counts those rows); rows without the key fall in the group ``"(none)"``; a side with
    no scored row in a group reads None.
    """
    snapshots = [snap for snap in (baseline, final) if snap is not None]
    measured = {s.example_id for snap in snapshots for s in snap.samples}
    rows = [example for example in examples if example.id in measured]
    out: dict[str, dict[str, SliceRow]] = {}
    for key in keys:
        members: dict[str, set[str]] = {}
        for example in rows:
            value = example.metadata.get(key)
            members.setdefault("(none)" if value is None else str(value), set()).add(example.id)
        table: dict[str, SliceRow] = {}
        for group in sorted(members):
            before, after = (
                _group_mean(baseline, members[group]),
                _group_mean(final, members[group]),
            )
            change = None if before is None or after is None else after - before
            table[group] = {
                "n": len(members[group]),
                "baseline": before,
                "final": after,
                "change": change,
            }
        out[key] = table
    return out


def _group_mean(snapshot: EvalSnapshot | None, ids: set[str]) -> float | None:
    if snapshot is None:
        return None
    values = [s.score for s in snapshot.samples if s.example_id in ids and s.score is not None]
    return fmean(values) if values else None
