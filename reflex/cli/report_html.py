"""One self-contained HTML report of a run: no scripts, no network, every text escaped.

``render_report(result, meta)`` turns a ``result.json`` dict (and the run's ``run.json``) into
a page: headline baseline -> final with the paired test, a score-trajectory plot (inline SVG),
per-metric and per-slice tables, the test rows baseline vs winner (flipped first, filtered
with CSS only) and a label task's confusion matrices (:mod:`reflex.cli.report_rows`),
the acceptance gate's evidence, the constant-answer check and the raced candidates
(:mod:`reflex.cli.report_evidence`),
per-iteration cards with the prompt diff and the reasoning,
rejected and failed candidates, warnings, and cost per role.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from reflex.checks.leakage import describe as describe_leak
from reflex.checks.versions import record_versions
from reflex.cli.report_evidence import evidence_section, race_section
from reflex.cli.report_rows import ROWS_STYLE, row_sections
from reflex.result import Example, RunEnd, best_val_of

__all__ = ["prompt_diff", "render_report", "trajectory_svg"]

Record = Mapping[str, Any]

STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:60em;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ddd;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .6em}
th{background:#f4f4f4;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
.headline{font-size:1.4em;margin:.3em 0}.sig{color:#1a7f37}.nsig{color:#9a6700}
.card{border:1px solid #ddd;border-radius:6px;padding:.5em 1em;margin:.8em 0}
.card.best{border-color:#1a7f37}.card.rejected,.card.failed{border-color:#cf222e}
pre{background:#f6f8fa;padding:.6em;overflow-x:auto;white-space:pre-wrap}
.add{color:#1a7f37}.del{color:#cf222e}.hunk{color:#8250df}.warn{color:#9a6700}
.end{font-size:1.2em;font-weight:bold}.end.good{color:#1a7f37}.end.paused{color:#9a6700}
.end.bad{color:#cf222e}
svg text{font-size:11px;fill:#444}
"""
COLORS = {"train": "#0969da", "val": "#bc4c00", "test": "#1a7f37"}


def _num(value: object, fmt: str = ".3f") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return escape(str(value))
    if isinstance(value, int) and fmt == ".3f":
        return str(value)
    return format(value, fmt)


def _table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for cell in row:
            numeric = isinstance(cell, int | float) and not isinstance(cell, bool)
            cls = ' class="n"' if numeric or cell is None else ""
            cells.append(
                f"<td{cls}>{_num(cell) if numeric or cell is None else escape(str(cell))}</td>"
            )
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def prompt_diff(before: str, after: str, a: str = "before", b: str = "after") -> str:
    """Unified diff of two prompts (``"(unchanged)"`` when they are equal)."""
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), a, b, lineterm="")
    return "\n".join(lines) or "(unchanged)"


def _diff_html(diff: str) -> str:
    out = []
    for line in diff.splitlines():
        cls = ""
        if line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+") and not line.startswith("+++"):
            cls = "add"
        elif line.startswith("-") and not line.startswith("---"):
            cls = "del"
        text = escape(line)
        out.append(f'<span class="{cls}">{text}</span>' if cls else text)
    return "<pre>" + "\n".join(out) + "</pre>"


def _points(result: Record) -> dict[str, list[tuple[float, float]]]:
    """(x, score) per series: x=0 is the baseline, 1..n the iterations, n+1 the final."""
    iterations = result.get("iterations") or []
    series: dict[str, list[tuple[float, float]]] = {"train": [], "val": [], "test": []}
    for record in iterations:
        x = float(record.get("iteration", 0))
        for name, key in (("train", "score"), ("val", "val_score")):
            if isinstance(record.get(key), int | float):
                series[name].append((x, float(record[key])))
    for x, key in ((0.0, "baseline"), (float(len(iterations) + 1), "final")):
        score = (result.get(key) or {}).get("mean_score")
        if isinstance(score, int | float):
            series["test"].append((x, float(score)))
    return series


def trajectory_svg(result: Record, width: int = 640, height: int = 260) -> str:
    """The score trajectory as inline SVG: train and val per iteration, test at both ends."""
    series = _points(result)
    last = max([x for pts in series.values() for x, _ in pts] + [1.0])
    left, right, top, bottom = 40, 110, 10, 30
    plot_w, plot_h = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + plot_w * x / last

    def sy(y: float) -> float:
        return top + plot_h * (1.0 - max(0.0, min(1.0, y)))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="score trajectory">',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
        'stroke="#ccc"/>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{sy(tick):.1f}" y2="{sy(tick):.1f}" '
            f'stroke="#eee"/><text x="{left - 5}" y="{sy(tick) + 4:.1f}" '
            f'text-anchor="end">{tick:.2f}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 5}" text-anchor="middle">'
        "iteration (0 = baseline, last = final)</text>"
    )
    for row, (name, pts) in enumerate(series.items()):
        color = COLORS[name]
        if len(pts) > 1 and name != "test":
            path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{color}"/>')
        for x, y in pts:
            parts.append(
                f'<circle class="pt-{name}" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="4" '
                f'fill="{color}"><title>{name} {x:g}: {y:.3f}</title></circle>'
            )
        ly = top + 15 + 18 * row
        parts.append(
            f'<circle cx="{width - right + 15}" cy="{ly - 4}" r="4" fill="{color}"/>'
            f'<text x="{width - right + 25}" y="{ly}">{name}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _vid(full: object) -> str:
    """A version id in short form, the full id in its title."""
    text = str(full or "-")
    return f'<code title="{escape(text, quote=True)}">{escape(text[:8])}</code>'


def _best_version(result: Record) -> str:
    best = result.get("best_prompt")
    found = [v for v in record_versions(result) if best is not None and v.get("text") == best]
    return f" &middot; best prompt version {_vid(found[-1].get('id'))}" if found else ""


def _card_version(record: Record, versions: Mapping[object, Record], parent: str) -> str:
    """The card's version line: its own id and parent when accepted, else its parent only."""
    version = versions.get(record.get("iteration")) if record.get("is_best") else None
    if version is None:
        return f"<p>candidate, not a version &middot; parent {_vid(parent)}</p>"
    return f"<p>version {_vid(version.get('id'))} &middot; parent {_vid(version.get('parent'))}</p>"


_END_WORDS = {
    RunEnd.SUCCEEDED: ("succeeded", "good"),
    RunEnd.PAUSED_BUDGET: ("paused on a budget: the final test score is honest", "paused"),
    RunEnd.NO_CANDIDATE: ("FAILED: no usable candidate", "bad"),
    RunEnd.BUDGET_STOPPED: ("stopped by a budget before the final test evaluation", "bad"),
    RunEnd.FAILED: ("failed", "bad"),
    RunEnd.INTERRUPTED: ("interrupted", "bad"),
}


def _end(result: Record) -> str:
    """The end state first, in colour; for no usable candidate, its failures by kind."""
    words, cls = _END_WORDS[RunEnd.of_record(result)]
    for warning in result.get("warnings") or []:
        if isinstance(warning, Mapping) and warning.get("kind") == "no_candidate":
            words += ": " + str(warning.get("message")).removeprefix("no usable candidate: ")
    return f'<p class="end {cls}">{escape(words)}</p>'


def _headline(result: Record) -> str:
    base = (result.get("baseline") or {}).get("mean_score")
    final = (result.get("final") or {}).get("mean_score")
    sig = result.get("significance") or {}
    line = f"test score {_num(base)} &rarr; {_num(final)}"
    if result.get("improvement") is not None:
        line += f" ({_num(result['improvement'], '+.3f')})"
    detail = "no significance test (the run did not finish)"
    if sig:
        verdict = "significant" if sig.get("significant") else "not significant"
        cls = "sig" if sig.get("significant") else "nsig"
        detail = (
            f"95% CI {_num(sig.get('ci_low'), '+.3f')}..{_num(sig.get('ci_high'), '+.3f')}, "
            f"p={_num(sig.get('p_value'), '.4f')} ({escape(str(sig.get('method', '')))}, "
            f'n={_num(sig.get("n"), "d")}): <span class="{cls}">{verdict}</span>'
        )
    line += _best_version(result)
    return f'{_end(result)}<p class="headline">{line}</p><p>{detail}</p>'


def _overview(result: Record, meta: Record) -> str:
    rows = [
        ("run", result.get("run_id") or meta.get("run_id")),
        ("strategy", result.get("strategy") or meta.get("strategy")),
        ("dataset", meta.get("dataset_name")),
        ("dataset fingerprint", meta.get("dataset_fingerprint")),
        ("started", meta.get("started")),
        ("stop reason", result.get("stop_reason")),
        ("end state", RunEnd.of_record(result).value),
        ("completed", str(bool(result.get("completed")))),
        (
            "split sizes",
            ", ".join(f"{k} {v}" for k, v in (result.get("split_sizes") or {}).items()),
        ),
        ("best val score", best_val_of(result)),
        ("elapsed (s)", result.get("elapsed_s")),
        ("reflex version", meta.get("reflex_version")),
    ]
    return _table(["field", "value"], [(k, "-" if v is None else v) for k, v in rows])


def _metrics_table(result: Record) -> str:
    base = (result.get("baseline") or {}).get("scores_by_metric") or {}
    final = (result.get("final") or {}).get("scores_by_metric") or {}
    rows = []
    for name in sorted(set(base) | set(final)):
        b, f = base.get(name), final.get(name)
        rows.append((name, b, f, None if b is None or f is None else f - b))
    if not rows:
        return "<p>no per-metric scores</p>"
    return _table(["metric", "baseline", "final", "change"], rows)


def _slices_table(result: Record) -> str:
    slices = result.get("slices") or {}
    if not slices:
        return "<p>no slices (run with <code>--slice-by KEY</code>)</p>"
    rows = [
        (key, group, row.get("n"), row.get("baseline"), row.get("final"), row.get("change"))
        for key, groups in slices.items()
        for group, row in groups.items()
    ]
    return _table(["key", "group", "n", "baseline", "final", "change"], rows)


def _verdict(record: Record) -> str:
    if record.get("failed"):
        return "failed"
    if record.get("rejected"):
        return "rejected"
    if record.get("is_best"):
        return "best"
    return "kept" if record.get("accepted") else "not kept"


def _cards(result: Record) -> str:
    parent = str(result.get("initial_prompt") or "")
    versions = record_versions(result)
    by_iteration, parent_id = {v.get("iteration"): v for v in versions[1:]}, versions[0]["id"]
    cards = []
    for record in result.get("iterations") or []:
        verdict = _verdict(record)
        prompt = str(record.get("system_prompt") or "")
        why = record.get("failed") or record.get("rejected")
        body = [
            f'<div class="card {verdict}"><h3>iteration {_num(record.get("iteration"), "d")}'
            f" &middot; {verdict}</h3>",
            f"<p>train {_num(record.get('score'))} &middot; val {_num(record.get('val_score'))}"
            f" &middot; phase {escape(str(record.get('phase') or '-'))}</p>",
            _card_version(record, by_iteration, parent_id),
        ]
        if why:
            body.append(f'<p class="warn">{escape(str(why))}</p>')
        for flag in record.get("leakage") or []:  # see reflex.checks.leakage
            body.append(f'<p class="warn">leakage: {escape(describe_leak(flag))}</p>')
        if record.get("reasoning"):
            body.append(f"<h4>reasoning</h4><pre>{escape(str(record['reasoning']))}</pre>")
        body.append("<h4>diff against the best prompt before this iteration</h4>")
        body.append(_diff_html(prompt_diff(parent, prompt, "best so far", "candidate")))
        cards.append("".join(body) + "</div>")
        if record.get("is_best"):
            parent = prompt
            parent_id = by_iteration.get(record.get("iteration"), {}).get("id", parent_id)
    return "".join(cards) or "<p>no iterations</p>"


def _rejected(result: Record) -> str:
    rows = [
        (r.get("iteration"), _verdict(r), r.get("failed") or r.get("rejected"), r.get("score"))
        for r in result.get("iterations") or []
        if r.get("failed") or r.get("rejected")
    ]
    if not rows:
        return "<p>none</p>"
    return _table(["iteration", "verdict", "reason", "train"], rows)


def _cost_cell(usage: Mapping[str, Any]) -> str:
    """``$0.0123``, ``unpriced (37 calls)`` or ``$0.0123 + unpriced (5 calls)``."""
    from reflex.models.usage import cost_text

    cost = usage.get("cost")
    if "cost_unknown" not in usage:  # not a role's usage (e.g. the Router's deployments)
        return "n/a"
    known = float(cost) if isinstance(cost, int | float) else None
    return cost_text(known, int(usage.get("calls") or 0), int(usage.get("cost_unknown") or 0))


def _cost(result: Record) -> str:
    usage = result.get("usage") or {}
    rows = [
        (role, u.get("calls"), u.get("cache_hits"), u.get("tokens"), _cost_cell(u))
        for role, u in usage.items()
        if isinstance(u, Mapping)
    ]
    if not rows:
        return "<p>no usage recorded</p>"
    table = _table(["role", "calls", "cache hits", "tokens", "cost"], rows)
    if "metric_calls" in usage:
        table += f"<p>metric calls: {_num(usage['metric_calls'], 'd')}</p>"
    return table


def _warnings(result: Record, more: Sequence[str] = ()) -> str:
    items = [
        str(w.get("message", w)) if isinstance(w, Mapping) else str(w)
        for w in result.get("warnings") or []
    ]
    if result.get("model_graded"):
        items.append("a judge model scored these numbers (model-graded metric)")
    items += more  # a label task's: one answered label took most test rows
    if not items:
        return "<p>none</p>"
    return (
        "<ul>"
        + "".join(f'<li class="warn">{escape(i)}</li>' for i in dict.fromkeys(items))
        + "</ul>"
    )


def render_report(
    result: Record, meta: Record | None = None, examples: Mapping[str, Example] | None = None
) -> str:
    """The whole page for a ``result.json`` dict (``meta``: the run's ``run.json``;
    ``examples``: the run's dataset rows by id, for the test rows' inputs and references)."""
    meta = meta or {}
    per_row, matrices, label_lines = row_sections(result, examples, meta.get("dataset_source"))
    title = f"aevyra-reflex run {result.get('run_id') or meta.get('run_id') or ''}".strip()
    initial = str(result.get("initial_prompt") or "")
    best = str(result.get("best_prompt") or "")
    sections = [
        ("Summary", _headline(result) + _overview(result, meta)),
        ("Score trajectory", trajectory_svg(result)),
        ("Per-metric test scores", _metrics_table(result)),
        ("Per-slice test scores", _slices_table(result)),
        ("Per-example test rows: baseline vs winner", per_row),
        ("Confusion matrices (label task)", matrices),
        ("Warnings", _warnings(result, label_lines)),
        ("Acceptance evidence and the constant answer", evidence_section(result)),
        ("Racing: candidates dropped early", race_section(result)),
        (
            "Best prompt",
            f"<pre>{escape(best)}</pre>"
            + _diff_html(prompt_diff(initial, best, "initial", "best")),
        ),
        ("Iterations", _cards(result)),
        ("Rejected and failed candidates", _rejected(result)),
        ("Cost", _cost(result)),
    ]
    body = "".join(f"<h2>{escape(name)}</h2>{html}" for name, html in sections)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        f"<title>{escape(title)}</title><style>{STYLE}{ROWS_STYLE}</style></head>"
        f"<body><h1>{escape(title)}</h1>{body}</body></html>\n"
    )
