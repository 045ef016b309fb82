"""The gate behind ``promote``: may a run's winner replace the prompt a registry alias holds?

On ``check``'s path (:mod:`reflex.run.gate`): the prompt the alias holds now (the incumbent) and
the run's winner are scored on the same rows, by the run's metrics, models and decoding
settings. The rule is "no significant regression": refused when the winner's mean is below the
incumbent's by more than the tolerance *and* the paired sign-flip test of the two on those rows
is significant at the run's alpha (the level of its own final paired test, recorded in
result.json; 0.05), or when a row errored. A dip the test cannot tell from noise passes. The
rows are the run's test rows (from the dataset file the run recorded), or every row of another
dataset.

Both evaluations go through the run's response cache (``<run dir>/cache.sqlite``, or its
``--cache-url``): the winner's test answers are there already, and so are the incumbent's when
it is the prompt the run started from (its baseline). :attr:`PromotionGate.calls` says how many
task-model calls each side would pay before any is made; what is paid stays in the cache, so a
second gate on the same rows pays nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reflex.data.dataset import Dataset, load_dataset
from reflex.data.demos import template_fields
from reflex.errors import ConfigurationError
from reflex.models.runner import LoopRunner
from reflex.result import EvalSnapshot, RunEnd
from reflex.run.evaluate import Evaluator
from reflex.run.gate import (
    Baseline,
    CheckOutcome,
    build_evaluator,
    compare,
    paid_calls,
    point_judges,
    rebuild_metrics,
    record_config,
)
from reflex.run.records import read_json
from reflex.types import Example

__all__ = ["DEFAULT_ALPHA", "PromotionGate", "plan_gate"]

DEFAULT_ALPHA = 0.05  # paired_test's level, the one a run's final paired test is made at


@dataclass
class PromotionGate:
    """A planned gate: the two prompts, the rows, and what scoring them would cost."""

    run: Path
    winner: str
    incumbent: str
    incumbent_label: str
    rows: list[Example]
    rows_label: str
    evaluator: Evaluator
    calls: dict[str, int]  # uncached task-model calls: {"winner": n, "incumbent": n}
    alpha: float = DEFAULT_ALPHA  # the run's: its final paired test's level

    def plan_lines(self) -> list[str]:
        """What the gate scores and what it costs, said before any call."""
        models = len(self.evaluator.models)
        each = len(self.rows) * models
        return [
            f"gate rows  {self.rows_label}, {models} model(s): {each} answers per prompt",
            f"calls      winner {self.calls['winner']}, {self.incumbent_label} "
            f"{self.calls['incumbent']} (the rest from the run's cache; judge calls, if any, "
            "come on top)",
        ]

    def decide(self, tolerance: float = 0.0) -> CheckOutcome:
        """Score both prompts and compare them: refused only on a significant regression
        beyond ``tolerance`` at the run's alpha (:class:`CheckOutcome`, ``alpha`` set)."""
        try:
            incumbent = self._score(self.incumbent, "gate:incumbent")
            winner = self._score(self.winner, "gate:winner")
        finally:
            self.close()
        baseline = Baseline(
            score=incumbent.mean_score,
            source=self.incumbent_label,
            per_example=incumbent.per_example(),
        )
        return compare(baseline, winner, tolerance, alpha=self.alpha)

    def _score(self, prompt: str, label: str) -> EvalSnapshot:
        return LoopRunner.shared().run(self.evaluator.evaluate(prompt, self.rows, label))

    def close(self) -> None:
        if self.evaluator.client.cache is not None:
            self.evaluator.client.cache.close()


def plan_gate(
    run: Path,
    incumbent: str,
    incumbent_label: str,
    *,
    dataset: str | Path | None = None,
    api_base: str | None = None,
    judge_api_base: str | None = None,
) -> PromotionGate:
    """The gate for run folder ``run``'s winner against ``incumbent`` (a prompt's string form):
    on the run's test rows, or on every row of ``dataset``. Nothing is called yet."""
    result = read_json(run / "result.json")
    if not RunEnd.of_record(result).measured:
        raise ConfigurationError(f"run {run.name} has no final test score: promote a finished run")
    config = record_config(read_json(run / "config.json"), api_base)
    winner = str(result.get("best_prompt") or "")
    fields = template_fields(winner, config.variables) or template_fields(
        incumbent, config.variables
    )
    rows, label = _rows(run, dataset, fields)
    metrics = point_judges(rebuild_metrics(config, (), f"run {run.name}"), judge_api_base)
    evaluator = build_evaluator(config, metrics, run.parent.parent / "cache.sqlite")
    calls = {
        "winner": paid_calls(evaluator, winner, rows),
        "incumbent": paid_calls(evaluator, incumbent, rows),
    }
    alpha = _alpha(result)
    return PromotionGate(
        run, winner, incumbent, incumbent_label, rows, label, evaluator, calls, alpha
    )


def _alpha(result: dict[str, object]) -> float:
    """The level of the run's own paired test of its baseline and final (result.json)."""
    found = result.get("significance")
    level = found.get("alpha") if isinstance(found, dict) else None
    return float(level) if isinstance(level, int | float) and 0 < level < 1 else DEFAULT_ALPHA


def _rows(
    run: Path, dataset: str | Path | None, fields: dict[str, str] | None
) -> tuple[list[Example], str]:
    if dataset is not None:
        rows = list(load_dataset(dataset, variables=fields))
        return rows, f"{len(rows)} rows of {dataset}"
    source = read_json(run / "run.json").get("dataset_source")
    if not source:
        raise ConfigurationError(
            f"run {run.name} recorded no dataset file: pass --dataset FILE (rows to gate on)"
        )
    data = load_dataset(source, variables=fields)
    _same_rows(run, data)
    ids = [str(i) for i in read_json(run / "splits.json").get("test") or []]
    if not ids:
        raise ConfigurationError(f"run {run.name} has no test rows: pass --dataset FILE")
    return [data.by_id(i) for i in ids], f"the run's {len(ids)} test rows ({source})"


def _same_rows(run: Path, data: Dataset) -> None:
    recorded = read_json(run / "run.json").get("dataset_fingerprint")
    if recorded not in (None, data.fingerprint()):
        raise ConfigurationError(
            f"the rows of {data.name} changed since run {run.name} (fingerprint mismatch): "
            "pass the run's dataset, or --dataset FILE to gate on other rows"
        )
