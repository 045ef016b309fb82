"""Terminal output: a progress bar per evaluation, one line per iteration, a final summary."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from reflex.callbacks import Callback, EvalLabel
from reflex.models.usage import cost_text
from reflex.redact import scrub
from reflex.result import EvalSnapshot, IterationRecord, OptimizationResult, RunEnd

if TYPE_CHECKING:
    from reflex.config import RunConfig

__all__ = [
    "ConsoleReporter",
    "constant_text",
    "end_line",
    "evidence_text",
    "log_to_console",
    "print_summary",
    "selection_text",
]


#: Below this baseline a relative change is not printed: +0.31 over 0.01 is "+3100%".
PCT_MIN_BASELINE = 0.1
#: Without a terminal (a CI log), an evaluation prints a line at start, at each quarter, at end.
PLAIN_STEPS = 4


def _fmt(value: float | None) -> str:
    return "  n/a" if value is None else f"{value:.3f}"


def improvement_text(improvement: float, baseline: float | None, pct: float | None) -> str:
    """``+0.310 (+31.0%)``; the percentage only over a baseline of at least PCT_MIN_BASELINE."""
    if pct is None or baseline is None:
        return f"{improvement:+.3f}"
    if abs(baseline) < PCT_MIN_BASELINE:
        return f"{improvement:+.3f} (no % shown over a baseline of {baseline:.3f})"
    return f"{improvement:+.3f} ({pct:+.1f}%)"


@contextlib.contextmanager
def log_to_console(console: Console, *, verbose: bool = False) -> Iterator[None]:
    """Inside the block, every log record goes through ``console`` (rich), so a warning written
    while a progress bar is live is printed above the bar instead of on top of it; the root
    logger's handlers and level are restored afterwards."""
    from rich.logging import RichHandler

    handler = RichHandler(console=console, show_time=False, show_path=False, markup=False)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.WARNING)
    try:
        yield
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])


class ConsoleReporter(Callback):
    """Progress on stderr; safe to call from the event-loop thread."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("{task.description:<18}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self._task: TaskID | None = None
        self._lock = threading.Lock()
        self._started = False
        # No live bar without a terminal: plain lines, so a redirected log is never silent.
        self._plain = not self.console.is_terminal
        self._plain_state: tuple[str, int, int, int] = ("", 0, 0, 0)  # label, total, done, step

    def on_run_start(self, config: RunConfig, initial_prompt: str) -> None:
        self.console.print(
            f"[bold]aevyra-reflex[/] strategy={config.strategy} "
            f"models={','.join(config.models)} dataset={config.dataset_name} "
            f"({config.dataset_size} rows)"
        )

    def on_evaluation_start(self, label: EvalLabel, total: int) -> None:
        if self._plain:
            with self._lock:
                self._plain_state = (str(label), total, 0, 0)
            self.console.print(f"{label}: {total} evaluations", soft_wrap=True)
            return
        with self._lock:
            if not self._started:
                self._progress.start()
                self._started = True
            self._task = self._progress.add_task(str(label), total=total)

    def on_evaluation_advance(self, n: int) -> None:
        if self._plain:
            self._plain_advance(n)
            return
        with self._lock:
            if self._task is not None:
                self._progress.advance(self._task, n)

    def _plain_advance(self, n: int) -> None:
        with self._lock:
            label, total, done, step = self._plain_state
            done += n
            reached = PLAIN_STEPS * done // total if total else 0
            self._plain_state = (label, total, done, max(step, reached))
        if step < reached < PLAIN_STEPS:
            self.console.print(f"{label}: {done}/{total}", soft_wrap=True)

    def on_evaluation_end(self, label: EvalLabel, snapshot: EvalSnapshot) -> None:
        if self._plain:
            self.console.print(f"{label}: done, mean {_fmt(snapshot.mean_score)}", soft_wrap=True)
            return
        with self._lock:
            if self._task is not None:
                self._progress.remove_task(self._task)
                self._task = None

    def on_baseline(self, snapshot: EvalSnapshot) -> None:
        self.console.print(f"baseline  test {_fmt(snapshot.mean_score)}")

    def on_iteration(self, record: IterationRecord) -> None:
        if record.failed or record.rejected:
            what = f"failed: {record.failed}" if record.failed else f"rejected: {record.rejected}"
            self.console.print(f"iter {record.iteration:>3}  {scrub(what)}", soft_wrap=True)
            return
        change = "" if record.change is None else f"({record.change:+.3f})"
        mark = " *best" if record.is_best else ""
        verdict = "kept" if record.accepted else "rejected"
        self.console.print(
            f"iter {record.iteration:>3}  train {_fmt(record.score)} {change:<9} "
            f"val {_fmt(record.val_score)}{mark:<6} {verdict:<8} calls {record.calls} "
            f"tokens {record.tokens:,} cost "
            f"{cost_text(record.cost, record.calls, record.cost_unknown)}"
            f"{evidence_text(record.evidence)}",
            soft_wrap=True,
        )

    def on_final(self, snapshot: EvalSnapshot) -> None:
        self.console.print(f"final     test {_fmt(snapshot.mean_score)}")

    def close(self) -> None:
        with self._lock:
            if self._started:
                self._progress.stop()
                self._started = False

    def on_run_end(self, result: OptimizationResult) -> None:
        self.close()

    def on_run_error(self, error: BaseException, partial: OptimizationResult | None) -> None:
        self.close()


#: How each end state is shown: its words and rich style (see reflex.checks.outcome).
_END_STYLE = {
    RunEnd.SUCCEEDED: ("succeeded", "bold green"),
    RunEnd.PAUSED_BUDGET: ("paused on a budget (the final test score is honest)", "bold yellow"),
    RunEnd.NO_CANDIDATE: ("FAILED: no usable candidate", "bold red"),
    RunEnd.BUDGET_STOPPED: ("stopped by a budget before the final test evaluation", "bold red"),
    RunEnd.FAILED: ("failed", "bold red"),
    RunEnd.INTERRUPTED: ("interrupted", "bold red"),
}


def end_line(result: OptimizationResult) -> Text:
    """The run's end state in words and colour; for no usable candidate, its failures by kind."""
    end = result.end_state or RunEnd.FAILED
    words, style = _END_STYLE[end]
    line = Text(words, style=style)
    first = next((w for w in result.warnings if w.get("kind") == "no_candidate"), None)
    if first is not None:
        message = scrub(str(first["message"])).removeprefix("no usable candidate: ")
        line.append(f": {message}", style)
    return line


def evidence_text(evidence: Mapping[str, Any] | None) -> str:
    """`` gate +0.025 p=0.5 vs it3 (40 rows)``: an iteration's acceptance evidence, or ""."""
    if not evidence or "p" not in evidence:
        return ""
    return (
        f"  gate {float(evidence['diff']):+.3f} p={float(evidence['p']):.3g} vs it"
        f"{evidence['against']} ({evidence['rows']} rows)"
    )


def selection_text(selection: Mapping[str, Any]) -> str:
    """The winner corrected for best-of-many, in one line."""
    verdict = "kept" if selection.get("kept") else "not kept: the initial prompt is"
    seen = f" ({selection['seen']} seen on part of the val rows)" if selection.get("seen") else ""
    return (
        f"iteration {selection['iteration']}: {float(selection['diff']):+.3f} over the initial "
        f"prompt, corrected p={float(selection['p']):.3g} among {selection['k']} candidates"
        f"{seen}, chance bound {float(selection['bound']):+.3f} ({verdict})"
    )


def constant_text(check: Mapping[str, Any]) -> str:
    """The winner's test label accuracy against the constant answer and the prior."""
    beats = "beats it" if check.get("beats_constant") else "does NOT beat it"
    text = (
        f"label accuracy {float(check['accuracy']):.3f}; always {check['constant_label']!r} "
        f"{float(check['constant']):.3f}, prior {float(check['prior']):.3f}: {beats}"
    )
    if check.get("off_label_rows"):
        text += f"; {check['off_label_rows']} answers outside the label set"
    return text


def print_summary(result: OptimizationResult, console: Console | None = None) -> None:
    """The end-of-run table: the end state first, baseline vs final on test, the significance
    test, the warnings to read before trusting the numbers, where things are."""
    console = console or Console()
    console.print(end_line(result), soft_wrap=True)
    table = Table(title="aevyra-reflex result", show_header=False)
    table.add_column("field", no_wrap=True)
    table.add_column("value", overflow="fold")  # a long run directory wraps, never truncated
    table.add_row("outcome", end_line(result))
    base = result.baseline.mean_score if result.baseline else None
    final = result.final.mean_score if result.final else None
    table.add_row("baseline (test)", _fmt(base))
    table.add_row("final (test)", _fmt(final))
    if result.improvement is not None:
        text = improvement_text(result.improvement, base, result.improvement_pct)
        table.add_row("improvement", text)
    if result.significance:
        from reflex.checks.stats import PairedTest

        table.add_row("significance", PairedTest(**result.significance).summary())
    table.add_row("best val score", _fmt(result.best_score_val))
    if result.selection:
        table.add_row("best of many (val)", selection_text(result.selection))
    if result.label_check:
        table.add_row("vs constant (test)", constant_text(result.label_check))
    table.add_row("iterations", str(len(result.iterations)))
    table.add_row("stopped", scrub(result.stop_reason))
    total = result.usage.get("total", {})
    calls, unknown = int(total.get("calls", 0)), int(total.get("cost_unknown", 0))
    table.add_row(
        "calls / tokens / cost",
        f"{calls} / {total.get('tokens', 0):,} / {cost_text(total.get('cost'), calls, unknown)}",
    )
    for warning in result.warnings:
        table.add_row(
            Text("warning", style="yellow"),
            Text(scrub(f"{warning.get('kind')}: {warning.get('message')}"), style="yellow"),
        )
    table.add_row("run directory", str(result.run_dir))
    console.print(table)
