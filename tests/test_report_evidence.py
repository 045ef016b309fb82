"""The report's evidence section (reflex.cli.report_evidence)."""

from __future__ import annotations

from reflex.cli.report_evidence import evidence_section

RECORD = {
    "iteration": 2,
    "val_score": 0.5,
    "evidence": {
        "rule": "significant",
        "against": 0,
        "rows": 6,
        "diff": 0.1667,
        "p": 0.5,
        "passed": False,
        "reason": "not better on val by the paired test (p=0.5)",
        "label": {"accuracy": 0.5, "beats_constant": False},
    },
}


def test_each_candidates_evidence_is_a_row() -> None:
    html = evidence_section({"iterations": [{"iteration": 1, "val_score": 0.3}, RECORD]})
    assert "<td>2</td><td>0.500</td><td>initial</td><td>6</td><td>+0.167</td><td>0.5</td>" in html
    assert "not better on val by the paired test" in html
    assert "the initial prompt stayed the best" in html
    assert "not a label task" in html


def test_the_correction_and_the_off_label_answers_are_shown_escaped() -> None:
    selection = {"iteration": 2, "diff": 0.2, "rows": 10, "k": 4, "bound": 0.25, "p": 0.3}
    check = {
        "accuracy": 0.4,
        "constant": 0.5,
        "constant_label": "sport",
        "prior": 0.3,
        "beats_constant": False,
        "collapsed": "sport",
        "off_label": {"sports": 3, "<b>odd</b>": 1},
        "near_misses": {"sports": "sport"},
        "off_label_rows": 4,
        "near_miss_rows": 3,
    }
    html = evidence_section({"iterations": [], "selection": selection, "label_check": check})
    assert "among 4 candidates chance alone reaches +0.250" in html
    assert "not kept: the initial prompt is" in html
    assert "does NOT beat it" in html and "collapsed onto &#x27;sport&#x27;" in html
    assert "<td>sports</td><td>3</td><td>sport</td>" in html
    assert "&lt;b&gt;odd&lt;/b&gt;" in html and "<b>odd" not in html
