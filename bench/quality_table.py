"""The tables of bench/quality.py: one row per (task, method, budget) over seeds.

A :class:`Cell` gathers a row's scores, calls and per-row test scores; :func:`table` prints the
rows of some tasks (issue 31's tasks, whose figure is an objective, in a table of their own),
with the paired sign-flip p against the best reference row and the best DSPy row;
:func:`write_readme` puts a table between its markers in bench/README.md; :func:`merge` reads
the cells of earlier ``--json`` files.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from quality_tasks import ROOT, TASKS

from reflex.checks.stats import paired_test

MARK = ("<!-- quality:begin -->", "<!-- quality:end -->")
MARK_OBJECTIVE = ("<!-- quality-tools:begin -->", "<!-- quality-tools:end -->")  # issue 31's


@dataclass
class Cell:
    """One (task, method, budget) row of the table, over seeds."""

    task: str
    method: str
    budget: int | None
    scores: list[float] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)  # the seed of each score
    per_row: dict[str, float] = field(default_factory=dict)  # "seed:id" -> test score
    # With a task objective, per_row holds the objective and this the metric's score (partial
    # credit), "seed:id" -> score; its mean per seed in partials.
    partial: dict[str, float] = field(default_factory=dict)
    partials: list[float] = field(default_factory=list)


def _versus(best: Cell | None, cell: Cell) -> str:
    """``cell`` minus ``best`` on the rows both scored (paired by seed and id), with p."""
    if best is None or cell is best or not set(cell.per_row) & set(best.per_row):
        return "-"
    test = paired_test(best.per_row, cell.per_row)
    return f"{test.mean_diff:+.3f} p={test.p_value:.3g}"


def _best(cells: Sequence[Cell]) -> Cell | None:
    return max(cells, key=lambda c: statistics.fmean(c.scores), default=None)


def is_reference(cell: Cell) -> bool:
    """A reference row (a prompt measured without search): no budget, and no preset's either
    (a preset row, ``METHOD budget=PRESET``, is a search sized by the product)."""
    return cell.budget is None and " budget=" not in cell.method


def _order(cell: Cell) -> tuple[int, int, str]:
    """References first, then ours by budget (presets last), then DSPy's."""
    group = 0 if is_reference(cell) else 2 if cell.method.startswith("DSPy") else 1
    return group, cell.budget if cell.budget is not None else 10**9, cell.method


def _summary(cells: Sequence[Cell], task: str, versus: str | None = None) -> list[str]:
    mine = sorted((c for c in cells if c.task == task and c.scores), key=_order)
    before = {c.budget: c for c in mine if c.method == versus and c.budget is not None}
    best = _best([c for c in mine if is_reference(c)])
    dspy = _best([c for c in mine if c.method.startswith("DSPy")])
    objective = has_objective(task)
    lines = []
    for cell in mine:
        mean = statistics.fmean(cell.scores)
        sd = statistics.stdev(cell.scores) if len(cell.scores) > 1 else 0.0
        ours = not is_reference(cell) and not cell.method.startswith("DSPy")
        versus_dspy = _versus(dspy, cell) if ours else "-"
        budget = "-" if cell.budget is None else str(cell.budget)
        calls = f"{statistics.fmean(cell.calls):.0f}" if cell.calls else "-"
        seeds = len(cell.scores)
        if objective:  # the partial credit instead of DSPy (which runs no tool or JSON task)
            partial = f"{statistics.fmean(cell.partials):.3f}" if cell.partials else "-"
            lines.append(
                f"| {task} | {cell.method} | {budget} | {mean:.3f} | {sd:.3f} | {partial} | "
                f"{seeds} | {calls} | {_versus(best, cell)} |"
            )
            continue
        extra = f" {_versus(before.get(cell.budget), cell) if ours else '-'} |" if versus else ""
        lines.append(
            f"| {task} | {cell.method} | {budget} | {mean:.3f} | {sd:.3f} | {seeds} | "
            f"{calls} | {_versus(best, cell)} | {versus_dspy} |{extra}"
        )
    return lines


HEADER = [
    "| task | method | search budget | test mean | sd | seeds | search calls | vs best reference "
    "| vs best DSPy (same seeds) |",
    "|---|---|---|---|---|---|---|---|---|",
]


HEADER_OBJECTIVE = [
    "| task | method | search budget | test figure | sd | partial credit | seeds | search calls "
    "| vs best reference |",
    "|---|---|---|---|---|---|---|---|---|",
]


def table(
    cells: Sequence[Cell], tasks: Sequence[str], objective: bool = False, versus: str | None = None
) -> str:
    """The table of ``tasks``; ``objective``: issue 31's tasks, whose figure is an objective;
    ``versus``: a last column pairing each of our rows with that method's row at its budget
    (before and after a change; not for objective tasks)."""
    lines = list(HEADER_OBJECTIVE if objective else HEADER)
    if versus and not objective:
        lines = [lines[0] + f" vs {versus} (same budget) |", lines[1] + "---|"]
    for task in tasks:
        lines += _summary(cells, task, None if objective else versus)
    return "\n".join(lines)


def has_objective(task: str) -> bool:
    return task in TASKS and TASKS[task].objective is not None


def write_readme(text: str, note: str, mark: tuple[str, str] = MARK) -> None:
    path = ROOT / "bench" / "README.md"
    readme = path.read_text(encoding="utf-8")
    block = f"{mark[0]}\n{note}\n\n{text}\n{mark[1]}"
    if mark[0] in readme:
        head, rest = readme.split(mark[0], 1)
        readme = head + block + rest.split(mark[1], 1)[1]
    else:
        readme = readme.rstrip() + "\n\n" + block + "\n"
    path.write_text(readme, encoding="utf-8")


def merge(paths: Sequence[str]) -> dict[tuple[str, str, int | None], Cell]:
    """Cells from earlier ``--json`` files, one score per (cell, seed): the first file wins.

    ``FILE:nocalls`` keeps that file's scores but not its call counts (a file written before
    the table counted search calls only held every task call). ``FILE:skip=auto+fewshot``
    leaves out those methods' cells (measured with code that has since changed);
    ``FILE:rename=OLD/NEW`` shows OLD's cells as NEW (a setting that is no longer the default).
    """
    cells: dict[tuple[str, str, int | None], Cell] = {}
    for spec in paths:
        path, *flags = spec.split(":")
        with_calls = "nocalls" not in flags  # its call counts mean something else
        skip = {m for f in flags if f.startswith("skip=") for m in f[5:].split("+")}
        names = dict(f[7:].split("/", 1) for f in flags if f.startswith("rename="))
        for data in json.loads(Path(path).read_text(encoding="utf-8")):
            if data["method"] in skip:
                continue
            key = (data["task"], names.get(data["method"], data["method"]), data["budget"])
            cell = cells.setdefault(key, Cell(*key))
            seeds = data.get("seeds") or sorted({int(k.split(":")[0]) for k in data["per_row"]})
            for i, seed in enumerate(seeds):
                if seed in cell.seeds:
                    continue
                cell.seeds.append(seed)
                cell.scores.append(data["scores"][i])
                if i < len(data.get("partials", [])):
                    cell.partials.append(data["partials"][i])
                if with_calls and i < len(data["calls"]):
                    cell.calls.append(data["calls"][i])
                prefix = f"{seed}:"
                cell.per_row.update(
                    {k: v for k, v in data["per_row"].items() if k.startswith(prefix)}
                )
                cell.partial.update(
                    {k: v for k, v in data.get("partial", {}).items() if k.startswith(prefix)}
                )
    return cells
