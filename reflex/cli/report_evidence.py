"""The report's evidence section: why each candidate was kept or not, and the trivial winner.

``evidence_section`` renders, from a ``result.json`` dict: every measured candidate's acceptance
evidence (``IterationRecord.evidence``: the rule, the incumbent it was compared with, paired
val rows, mean difference, one-sided p, the verdict and, on a label task, its val label accuracy
against the constant answer), the winner corrected for best-of-many (``selection``), and on a
label task the winner's test answers against the constant answer and the label prior
(``label_check``) with the answers outside the label set, counted, each with the label it
nearly is. ``race_section`` renders the raced candidates (``--race``): the rung each reached,
its rows and partial score, the leader's, and whether it was dropped there. Every text is
escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

__all__ = ["evidence_section", "race_section"]


def _num(value: object, fmt: str = ".3f") -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return format(value, fmt)
    return "n/a" if value is None else escape(str(value))


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _candidates(result: Mapping[str, Any]) -> str:
    rows = []
    for record in result.get("iterations") or []:
        evidence = record.get("evidence")
        if not isinstance(evidence, Mapping):
            continue
        label = evidence.get("label") or {}
        rows.append(
            [
                _num(record.get("iteration"), "d"),
                _num(record.get("val_score")),
                "initial" if evidence.get("against") == 0 else f"it {evidence.get('against')}",
                _num(evidence.get("rows"), "d"),
                _num(evidence.get("diff"), "+.3f"),
                _num(evidence.get("p"), ".3g"),
                "kept" if evidence.get("passed") else escape(str(evidence.get("reason") or "no")),
                _num(label.get("accuracy")) if label else "-",
                _num(label.get("beats_constant")) if label else "-",
            ]
        )
    if not rows:
        return "<p>no candidate was measured on val</p>"
    headers = ["iteration", "val", "against", "rows", "diff", "p", "verdict"]
    return _table([*headers, "label accuracy", "beats constant"], rows)


def _selection(selection: Mapping[str, Any] | None) -> str:
    if not selection:
        return "<p>best of many: the initial prompt stayed the best (nothing to correct)</p>"
    verdict = "kept" if selection.get("kept") else "not kept: the initial prompt is"
    return (
        f"<p>best of many: iteration {_num(selection.get('iteration'), 'd')} gained "
        f"{_num(selection.get('diff'), '+.3f')} over the initial prompt on "
        f"{_num(selection.get('rows'), 'd')} val rows; among {_num(selection.get('k'), 'd')} "
        f"candidates{_seen(selection)} chance alone reaches {_num(selection.get('bound'), '+.3f')} "
        f"(corrected p={_num(selection.get('p'), '.3g')}, {escape(str(selection.get('method')))}"
        f"): {verdict}</p>"
    )


def _seen(selection: Mapping[str, Any]) -> str:
    seen = selection.get("seen")
    return f" ({seen} of them seen on part of the val rows only)" if seen else ""


def race_section(result: Mapping[str, Any]) -> str:
    """Every raced candidate (``IterationRecord.race``, ``--race``), by race: the rung it
    reached, that rung's val rows, its partial score, the rung leader's, the paired p and
    whether it was dropped there or survived to be measured on every val row."""
    rows = []
    for record in result.get("iterations") or []:
        race = record.get("race")
        if not isinstance(race, Mapping):
            continue
        dropped = bool(race.get("dropped"))
        rows.append(
            [
                _num(race.get("race"), "d"),
                _num(record.get("iteration"), "d"),
                f"{_num(race.get('rung'), 'd')} of {_num(race.get('rungs'), 'd')}",
                str(len(race.get("rows") or ())),
                _num(race.get("score")),
                f"{escape(str(race.get('leader') or '-'))} {_num(race.get('leader_score'))}",
                _num(race.get("p"), ".3g"),
                "dropped" if dropped else f"survived: val {_num(record.get('val_score'))}",
            ]
        )
    if not rows:
        return "<p>no candidate was raced (racing is on with --race)</p>"
    headers = ["race", "iteration", "rung", "rows", "partial score", "leader", "p", "verdict"]
    return _table(headers, rows)


def _label(check: Mapping[str, Any] | None) -> str:
    if not check:
        return "<p>not a label task: no constant-answer check</p>"
    beats = "beats it" if check.get("beats_constant") else "does NOT beat it"
    collapsed = check.get("collapsed")
    lines = [
        f"<p>the winner on test: label accuracy {_num(check.get('accuracy'))}; answering "
        f"{escape(repr(check.get('constant_label')))} on every row scores "
        f"{_num(check.get('constant'))}, the label prior {_num(check.get('prior'))}: {beats}"
        + (f"; its answers collapsed onto {escape(repr(collapsed))}" if collapsed else "")
        + "</p>"
    ]
    off = dict(check.get("off_label") or {})
    misses = dict(check.get("near_misses") or {})
    if off:
        rows = [
            [escape(answer), str(n), escape(misses.get(answer, "-"))] for answer, n in off.items()
        ]
        lines.append(
            f"<p>{_num(check.get('off_label_rows'), 'd')} answers outside the label set "
            f"({_num(check.get('near_miss_rows'), 'd')} near misses):</p>"
            + _table(["answer", "rows", "nearly the label"], rows)
        )
    return "".join(lines)


def evidence_section(result: Mapping[str, Any]) -> str:
    """The section's HTML for a ``result.json`` dict (see the module docstring)."""
    selection = result.get("selection")
    check = result.get("label_check")
    return (
        _candidates(result)
        + _selection(selection if isinstance(selection, Mapping) else None)
        + _label(check if isinstance(check, Mapping) else None)
    )
