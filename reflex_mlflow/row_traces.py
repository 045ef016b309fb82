"""When the MLflow callback writes per-row traces (``MLflowCallback(row_traces=True)``, the
default; ``--no-mlflow-row-traces`` turns it off), and what it remembers between hooks.

The baseline and the final on test are written when their hooks come (``on_baseline``,
``on_final``); the winner's val evaluation at the run's end, once the winner is known: the val
evaluation of the last iteration that was best (``is_best``), else the initial prompt's
(``val:baseline``), kept only when its prompt is the result's best prompt. Each batch of rows
is its own guarded call, so a tracking server that dies mid-logging costs the callback's breaker
two failed batches (seconds), not one timeout per row; an evaluation whose rows all landed is
recorded in the run's ``.trackers.json`` (``row_traces``), and a resumed run or
``aevyra-reflex sync`` writes the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reflex.api.tracking import (
    change_of,
    evaluation_examples,
    save_tracker_state,
    tracker_state,
)
from reflex_mlflow.evaluations import RowEvaluations, batches

if TYPE_CHECKING:
    from reflex.api import (
        Dataset,
        EvalLabel,
        EvalSnapshot,
        Example,
        IterationRecord,
        OptimizationResult,
        Sample,
    )

__all__ = ["BASELINE", "FINAL", "WINNER_VAL", "RowTraces"]

BASELINE, FINAL, WINNER_VAL = "test:baseline", "test:final", "val:winner"
STATE_KEY = "row_traces"  # the evaluations whose rows all landed, in .trackers.json

Attempt = Callable[[str, Callable[[], None]], bool]  # (hook, action) -> it landed


class RowTraces:
    """The per-row traces of one reflex run's evaluations.

    ``attempt`` runs one guarded action (the callback's breaker) and says whether it landed.
    ``batch``: rows per batch (the run's ``max_workers``).
    """

    def __init__(
        self,
        writer: RowEvaluations,
        attempt: Attempt,
        *,
        run_dir: Path | None,
        dataset: Dataset | None,
        batch: int,
    ) -> None:
        self.writer = writer
        self.attempt = attempt
        self.run_dir = run_dir
        self.dataset = dataset
        self.batch = batch
        self.done: set[str] = set(tracker_state(run_dir, "mlflow").get(STATE_KEY) or ())
        self.baseline: EvalSnapshot | None = None
        self._val: dict[int, EvalSnapshot] = {}  # val evaluations not yet recorded, by iteration
        self._winner: EvalSnapshot | None = None
        self.written = 0  # rows written by this process

    # --- what the hooks feed -----------------------------------------------------------------

    def val(self, label: EvalLabel, snapshot: EvalSnapshot) -> None:
        """Keep a val evaluation until its iteration says whether it made the winner."""
        if label.split != "val":
            return
        if label.kind == "baseline":
            self._winner = snapshot
        elif label.iteration is not None:
            self._val[label.iteration] = snapshot

    def iteration(self, record: IterationRecord) -> None:
        snapshot = self._val.get(record.iteration)
        if record.is_best and snapshot is not None:
            self._winner = snapshot
        self._val = {k: v for k, v in self._val.items() if k > record.iteration}

    # --- writing -----------------------------------------------------------------------------

    def evaluation(self, hook: str, label: str, snapshot: EvalSnapshot) -> None:
        """Write ``snapshot``'s rows as the evaluation ``label`` (once per run)."""
        if label == BASELINE:
            self.baseline = snapshot
        if label in self.done or not snapshot.samples:
            return
        opened: dict[str, str] = {}
        logged: set[str] = set()

        def start() -> None:
            opened["run"], created = self.writer.open(label, snapshot)
            if not created:  # a resumed run or a sync: its rows may be there already
                logged.update(self.writer.logged(opened["run"]))

        if not self.attempt(hook, start):
            return
        examples = evaluation_examples(self.run_dir, self.dataset, snapshot.system_prompt)
        changes = self._changes(snapshot) if label == FINAL else None
        todo = [s for s in snapshot.samples if s.key not in logged]
        landed = True
        for rows in batches(todo, self.batch):
            write = self._writer(opened["run"], label, rows, examples, snapshot, changes)
            landed = self.attempt(hook, write) and landed
        if landed:
            self.done.add(label)
            save_tracker_state(self.run_dir, "mlflow", **{STATE_KEY: sorted(self.done)})

    def _writer(
        self,
        run_id: str,
        label: str,
        rows: Sequence[Sample],
        examples: Mapping[str, Example],
        snapshot: EvalSnapshot,
        changes: Mapping[str, str] | None,
    ) -> Callable[[], None]:
        def write() -> None:
            built = self.writer.traces(
                run_id, label, rows, examples, snapshot.system_prompt, changes
            )
            self.writer.write(run_id, built)
            self.written += len(built)

        return write

    def winner(self, hook: str, result: OptimizationResult) -> None:
        """The winner's val evaluation, when it is the result's best prompt's."""
        winner = self._winner
        if winner is not None and winner.system_prompt == result.best_prompt:
            self.evaluation(hook, WINNER_VAL, winner)

    def _changes(self, final: EvalSnapshot) -> dict[str, str]:
        before = {s.key: s.score for s in self.baseline.samples} if self.baseline else {}
        return {s.key: change_of(before.get(s.key), s.score) for s in final.samples}
