"""The report's evidence section (reflex.cli.report_evidence)."""

from __future__ import annotations

from reflex.cli.report_evidence import evidence_section, race_section

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


def test_each_raced_candidate_is_a_row_with_its_rung() -> None:
    race = {"race": 1, "rungs": 3, "leader": "candidate <0>", "leader_score": 1.0}
    dropped = {"rung": 1, "rows": ["a", "b", "c", "d", "e"], "score": 0.2, "p": 0.03125}
    survived = {"rung": 3, "rows": ["a"] * 20, "score": 0.9, "p": 1.0, "dropped": False}
    html = race_section(
        {
            "iterations": [
                {"iteration": 1, "val_score": 0.3},  # not raced: no row
                {"iteration": 2, "race": {**race, **dropped, "dropped": True}},
                {"iteration": 3, "val_score": 0.9, "race": {**race, **survived}},
            ]
        }
    )
    assert html.count("<tr>") == 3  # the header and the two raced candidates
    assert "<td>1</td><td>2</td><td>1 of 3</td><td>5</td><td>0.200</td>" in html
    assert "<td>candidate &lt;0&gt; 1.000</td><td>0.0312</td><td>dropped</td>" in html
    assert "<td>3 of 3</td><td>20</td><td>0.900</td>" in html and "survived: val 0.900" in html
    assert "no candidate was raced" in race_section({"iterations": [{"iteration": 1}]})


def test_the_correction_says_how_many_were_seen_on_part_of_the_rows() -> None:
    selection = {"iteration": 2, "diff": 0.2, "rows": 10, "k": 6, "seen": 4, "bound": 0.3}
    html = evidence_section({"iterations": [], "selection": selection})
    assert "among 6 candidates (4 of them seen on part of the val rows only)" in html
