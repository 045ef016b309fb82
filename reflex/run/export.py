"""Distillation data: the best prompt's rewarded rollouts as chat-format training examples.

The rollouts are the run's own: the best prompt is evaluated on the chosen split through the
run directory's response cache, so answers the run already paid for are read back, not asked
again. Rows missing from the cache would be real calls; :func:`plan_export` counts them first.
Held-out rows (val, test) are never exported unless asked: training on them would leak the
data the run's scores were measured on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reflex.data.dataset import Dataset
from reflex.errors import ConfigurationError
from reflex.models.shared_cache import open_cache
from reflex.result import EvalSnapshot, RunEnd
from reflex.run.evaluate import Evaluator, render_messages
from reflex.run.gate import (
    build_evaluator,
    paid_calls,
    point_judges,
    rebuild_metrics,
    record_config,
    run_evaluation,
)
from reflex.run.records import read_json
from reflex.toolcalls import parse_answer, to_openai
from reflex.types import Example, Metric

__all__ = ["ExportPlan", "held_out_warning", "plan_export", "training_examples"]

HELD_OUT = ("val", "test")


@dataclass
class ExportPlan:
    """What an export will read: the prompt, the rows, and how many calls are not cached."""

    run: Path
    prompt: str
    split: str
    examples: list[Example]
    evaluator: Evaluator
    uncached: int
    cache_url: str | None = None  # the run's --cache-url (None: RUN_DIR/cache.sqlite)
    # The run's --tools (a row's own replace them): written with each row that offers tools.
    tools: list[dict[str, Any]] = field(default_factory=list)

    def rollouts(self) -> EvalSnapshot:
        """Evaluate the best prompt on the rows (cache first; ``uncached`` calls are paid)."""
        return run_evaluation(self.evaluator, self.prompt, self.examples, f"export:{self.split}")

    def close(self) -> None:
        if self.evaluator.client.cache is not None:
            self.evaluator.client.cache.close()

    def keep_paid_answers(self) -> None:
        """Reopen the run's cache for writing, so the rollouts about to be paid for are kept
        (a second export then pays nothing). Without paid calls it stays read-only: an export
        writes nothing into the run directory, which may be read-only."""
        client = self.evaluator.client
        if client.cache is None or not client.cache.read_only:
            return
        client.cache.close()
        client.cache = open_cache(self.cache_url, self.run.parent.parent / "cache.sqlite")


def plan_export(
    run: Path,
    dataset: Dataset,
    split: str,
    *,
    api_base: str | None = None,
    supplied: Sequence[Metric] = (),
    judge_api_base: str | None = None,
) -> ExportPlan:
    """Check the run and dataset, build the evaluator and count the uncached calls.

    The run's metrics are rebuilt from its config.json (:func:`reflex.run.gate.rebuild_metrics`);
    ``supplied`` fills in those it could not record (e.g. an older run's judge);
    ``judge_api_base`` is where every judge's calls go (the record keeps the URL redacted).
    """
    meta = read_json(run / "run.json")
    result = read_json(run / "result.json")
    if not RunEnd.of_record(result).measured:  # a paused run's final is honest too
        raise ConfigurationError(f"run {run.name} did not complete; export from a finished run")
    if meta.get("dataset_fingerprint") not in (None, dataset.fingerprint()):
        raise ConfigurationError(
            f"the dataset's rows differ from run {run.name}'s (fingerprint mismatch): pass the "
            "dataset the run used"
        )
    ids = read_json(run / "splits.json").get(split) or []
    if not ids:
        raise ConfigurationError(f"run {run.name} has no {split} rows")
    config = record_config(read_json(run / "config.json"), api_base)
    metrics = point_judges(rebuild_metrics(config, supplied, f"run {run.name}"), judge_api_base)
    # Read-only: counting and reading cached rollouts writes nothing into the run directory.
    evaluator = build_evaluator(config, metrics, run.parent.parent / "cache.sqlite", read_only=True)
    examples = [dataset.by_id(str(i)) for i in ids]
    prompt = str(result["best_prompt"])
    uncached = paid_calls(evaluator, prompt, examples)
    return ExportPlan(
        run, prompt, split, examples, evaluator, uncached, config.cache_url, config.tools or []
    )


def training_examples(
    plan: ExportPlan, snapshot: EvalSnapshot, min_score: float
) -> list[dict[str, list[dict[str, Any]]]]:
    """One ``{"messages": [...]}`` per rollout scoring at least ``min_score`` without error.

    The messages are exactly what the model was sent (the best prompt as the system message, a
    chat template rendered with the row's values) followed by its answer as the assistant turn:
    an answer that called tools as OpenAI's ``tool_calls``, with the ``tools`` the request
    offered beside the messages (OpenAI's fine-tuning format for function calling).
    """
    rows = {example.id: example for example in plan.examples}
    out = []
    for sample in snapshot.samples:
        if sample.error is not None or sample.score is None or sample.score < min_score:
            continue
        example = rows[sample.example_id]
        sent = render_messages(plan.prompt, example, plan.evaluator.prompt_mode)
        row: dict[str, list[dict[str, Any]]] = {"messages": [*sent, _assistant(sample.output)]}
        tools = [dict(t) for t in example.tools] or plan.tools
        if tools:
            row["tools"] = tools
        out.append(row)
    return out


def _assistant(output: str) -> dict[str, Any]:
    """The assistant turn of an answer string (its calls as ``tool_calls``)."""
    content, calls = parse_answer(output)
    if not calls:
        return {"role": "assistant", "content": content}
    return {"role": "assistant", "content": content or None, "tool_calls": to_openai(calls)}


def held_out_warning(split: str) -> str | None:
    """The warning for exporting a held-out split (None for train)."""
    if split not in HELD_OUT:
        return None
    return (
        f"warning: exporting {split} rollouts: a model trained on them has seen the rows the "
        f"run's {split} scores were measured on, so those scores no longer hold for it"
    )
