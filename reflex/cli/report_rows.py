"""The report's per-row sections: the test rows baseline vs winner, and a label task's matrices.

``examples_section`` shows each test (example, model) row: id, input (cut), reference, the
baseline's and the winner's answer and score, and whether it regressed, improved or stayed;
flipped rows first (:func:`reflex.checks.examples.compare_rows`). Answers are shown readably:
tool calls (``<tool_call>`` lines, :func:`reflex.toolcalls.parse_answer`) one per line as
``name(arguments)``, a JSON answer pretty-printed. The filter is CSS only: radio inputs before
the table and ``:checked ~`` rules hide the other rows (no script: the page's CSP allows none).
At most ``MAX_ROWS`` rows are shown (flipped rows first), with a note saying how many were left.

``confusion_section`` draws the baseline's and the winner's confusion matrices side by side
(recall per reference row, precision per answered column), a per-label precision/recall table,
and a plain warning line when one answered label took most rows
(:meth:`reflex.checks.confusion.Confusion.warning`). Every text is escaped.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from reflex.checks.confusion import MAX_LABELS, Confusion
from reflex.checks.examples import CHANGES, ExampleRow, compare_rows, label_matrices
from reflex.result import EvalSnapshot, Example
from reflex.toolcalls import parse_answer

__all__ = [
    "MAX_ROWS",
    "ROWS_STYLE",
    "confusion_section",
    "examples_section",
    "label_warnings",
    "readable",
    "row_sections",
]

MAX_ROWS = 300
INPUT_CHARS = 400
ANSWER_CHARS = 1500
# Radio id -> the row classes it shows; "all" shows every row.
FILTERS = {
    "all": CHANGES,
    "flipped": ("regressed", "improved"),
    "regressed": ("regressed",),
    "improved": ("improved",),
    "same": ("same", "unscored"),
}
ROWS_STYLE = (
    "table.ex{table-layout:fixed;width:100%;font-size:.9em}"
    "table.ex td{vertical-align:top;white-space:pre-wrap;overflow-wrap:anywhere}"
    "table.ex td.id{width:6em}td .sc{display:block;color:#57606a;font-size:.9em}"
    "tr.regressed td.ch{color:#cf222e;font-weight:bold}"
    "tr.improved td.ch{color:#1a7f37;font-weight:bold}"
    ".filters label{margin-right:1em}.filters input:checked+label{font-weight:bold}"
    ".call{color:#8250df}.cut{color:#57606a}"
    ".matrices{display:flex;flex-wrap:wrap;column-gap:1.5em}table.cm{font-size:.9em}"
    "table.cm td.d{font-weight:bold}table.cm th.r{text-align:right}"
    "table.cm td,table.cm th{padding:.2em .45em}"
    + "".join(
        f"#exf-{name}:checked~table.ex tr.row:not({','.join('.' + c for c in shown)})"
        "{display:none}"
        for name, shown in FILTERS.items()
        if name != "all"
    )
)


def _cut(text: str, limit: int) -> str:
    """``text`` escaped, cut at ``limit`` characters with a note of how many were left."""
    if len(text) <= limit:
        return escape(text)
    return f'{escape(text[:limit])}<span class="cut">… ({len(text) - limit} more characters)</span>'


def readable(answer: str, limit: int = ANSWER_CHARS) -> str:
    """An answer as escaped HTML: its text (a JSON value pretty-printed), then each tool call
    on a line of its own as ``name({arguments})``."""
    content, calls = parse_answer(answer)
    try:
        value = json.loads(content) if content.strip()[:1] in ("{", "[") else None
    except ValueError:
        value = None
    if value is not None:
        content = json.dumps(value, indent=2, ensure_ascii=False)
    parts = [_cut(content, limit)] if content.strip() or not calls else []
    for call in calls:
        arguments = json.dumps(dict(call.arguments), ensure_ascii=False)
        parts.append(
            f'<span class="call">call {escape(call.name)}({_cut(arguments, limit)})</span>'
        )
    return "\n".join(parts)


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _row(row: ExampleRow, models: bool) -> str:
    ident = escape(row.example_id) + (f"\n{escape(row.model)}" if models else "")
    base = (
        "not evaluated"
        if row.baseline_output is None
        else readable(row.baseline_output)
        + f'<span class="sc">score {_score(row.baseline_score)}</span>'
    )
    final = readable(row.final_output) + f'<span class="sc">score {_score(row.final_score)}</span>'
    cells = [
        f'<td class="id">{ident}</td>',
        f"<td>{'-' if row.input is None else _cut(row.input, INPUT_CHARS)}</td>",
        f"<td>{'-' if row.reference is None else readable(row.reference)}</td>",
        f"<td>{base}</td>",
        f"<td>{final}</td>",
        f'<td class="ch">{escape(row.change)}</td>',
    ]
    return f'<tr class="row {row.change}">{"".join(cells)}</tr>'


def examples_section(rows: Sequence[ExampleRow], note: str | None = None) -> str:
    """The per-row table with its CSS filter; ``note``: why inputs/references are missing."""
    if not rows:
        return "<p>no test rows recorded (the run ended before its final test evaluation)</p>"
    counts = Counter(row.change for row in rows)
    radios = []
    for name, shown in FILTERS.items():
        n = sum(counts[c] for c in shown)
        checked = " checked" if name == "all" else ""
        radios.append(
            f'<input type="radio" name="exf" id="exf-{name}"{checked}>'
            f'<label for="exf-{name}">{name} ({n})</label>'
        )
    shown_rows = rows[:MAX_ROWS]
    lines = [
        f"<p>{len(rows)} test rows: {counts['regressed']} regressed, {counts['improved']} "
        f"improved, {counts['same']} same, {counts['unscored']} unscored (a side has no "
        "score); flipped rows first.</p>"
    ]
    if note:
        lines.append(f'<p class="warn">{escape(note)}</p>')
    if len(rows) > MAX_ROWS:
        lines.append(
            f'<p class="warn">showing the first {MAX_ROWS} of {len(rows)} rows (flipped rows '
            "first); every row is in the run's evaluations.jsonl (and the trackers' "
            "evaluation tables). The filter counts are of all rows.</p>"
        )
    models = len({row.model for row in rows}) > 1
    head = "".join(
        f"<th>{h}</th>" for h in ("id", "input", "reference", "baseline", "winner", "change")
    )
    body = "".join(_row(row, models) for row in shown_rows)
    table = f'<table class="ex"><tr>{head}</tr>{body}</table>'
    return "".join(lines) + f'<div class="filters">{"".join(radios)}{table}</div>'


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _matrix(name: str, matrix: Confusion) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in matrix.columns)
    body = []
    stats = matrix.per_label()
    for i, label in enumerate(matrix.labels):
        cells = []
        for j, count in enumerate(matrix.counts[i]):
            share = count / max(1, stats[i].support)
            shade = f' style="background:rgba(9,105,218,{0.6 * share:.2f})"' if count else ""
            cls = "n d" if i == j else "n"
            cells.append(f'<td class="{cls}"{shade}>{count}</td>')
        body.append(
            f'<tr><th class="r">{escape(label)}</th>{"".join(cells)}'
            f'<td class="n">{_ratio(stats[i].recall)}</td></tr>'
        )
    precision = "".join(f'<td class="n">{_ratio(s.precision)}</td>' for s in stats)
    filler = '<td class="n">-</td>' if matrix.other else ""
    accuracy = _ratio(matrix.accuracy)
    return (
        f'<div class="matrix"><h3>{escape(name)}</h3><table class="cm">'
        f"<tr><th>reference \\ answer</th>{head}<th>recall</th></tr>{''.join(body)}"
        f'<tr><th class="r">precision</th>{precision}{filler}<td class="n">-</td></tr>'
        f"</table><p>{matrix.n} rows; accuracy {accuracy}</p></div>"
    )


def _per_label(matrices: Mapping[str, Confusion]) -> str:
    names = list(matrices)
    head = "".join(f"<th>{n} precision</th><th>{n} recall</th>" for n in names)
    first = matrices[names[0]]
    rows = []
    for i, label in enumerate(first.labels):
        cells = "".join(
            f'<td class="n">{_ratio(s.precision)}</td><td class="n">{_ratio(s.recall)}</td>'
            for s in (matrices[n].per_label()[i] for n in names)
        )
        rows.append(
            f'<tr><td>{escape(label)}</td><td class="n">{first.per_label()[i].support}'
            f"</td>{cells}</tr>"
        )
    return f"<table><tr><th>label</th><th>support</th>{head}</tr>{''.join(rows)}</table>"


def label_warnings(matrices: Mapping[str, Confusion]) -> list[str]:
    """Each matrix's warning line (:meth:`Confusion.warning`), "baseline" then "winner"."""
    names = {"baseline": "the baseline", "final": "the winner"}
    found = (m.warning(names.get(k, k)) for k, m in matrices.items())
    return [line for line in found if line is not None]


def confusion_section(matrices: Mapping[str, Confusion], reason: str) -> str:
    """Both matrices side by side (``"baseline"``, ``"final"``), or ``reason`` there are none."""
    if not matrices:
        return f"<p>{escape(reason)}</p>"
    names = {"baseline": "baseline", "final": "winner"}
    shown = {names.get(k, k): m for k, m in matrices.items()}
    lines = "".join(f'<p class="warn">warning: {escape(w)}</p>' for w in label_warnings(matrices))
    grids = "".join(_matrix(name, m) for name, m in shown.items())
    note = (
        "<p>Answers and references compared as exact_match compares them (case, spacing, "
        f"quotes and a trailing period ignored); a label task has 2 to {MAX_LABELS} labels; "
        "an answer that is no label counts as (other).</p>"
    )
    return f'{lines}<div class="matrices">{grids}</div>{_per_label(shown)}{note}'


def row_sections(
    result: Mapping[str, Any], examples: Mapping[str, Example] | None, source: object
) -> tuple[str, str, list[str]]:
    """The per-example section, the confusion-matrix section and its warning lines, of a
    ``result.json`` dict's test rows; ``examples``: the dataset's rows by id, ``source``: its
    file, for the note."""
    final, base = result.get("final"), result.get("baseline")
    if not isinstance(final, Mapping) or not final.get("samples"):
        none = "no test rows recorded (the run ended before its final test evaluation)"
        return f"<p>{none}</p>", f"<p>{none}</p>", []
    baseline = EvalSnapshot.from_dict(dict(base)) if isinstance(base, Mapping) else None
    rows = compare_rows(baseline, EvalSnapshot.from_dict(dict(final)), examples or {})
    note, reason = None, "not a label task (the references are not a small label set)"
    if not examples:
        why = (
            f"the run's dataset file {source} could not be read"
            if source
            else "the run recorded no dataset file (in-memory rows)"
        )
        note = f"inputs and references unknown: {why} (pass --dataset FILE)"
        reason = f"no confusion matrix: {note}"
    matrices = label_matrices(rows, (e.ideal for e in (examples or {}).values()))
    sections = examples_section(rows, note), confusion_section(matrices, reason)
    return (*sections, label_warnings(matrices))
