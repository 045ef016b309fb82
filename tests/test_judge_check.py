"""judge-check: a judge measured against human pass/fail labels (TPR, TNR, the disagreements)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import LABELS
from test_judge import full_responder

from reflex.cli import build_cli
from reflex.testing import FakeModel


@pytest.fixture
def fake() -> FakeModel:
    return FakeModel(full_responder).install()


def write_labelled(tmp_path: Path) -> Path:
    rows = []
    for i in range(20):
        good = i % 2 == 0
        answer = LABELS[i % 2] if good or i % 4 == 1 else f"I think it is {LABELS[i % 2]}."
        # human labels: pass for one-word answers, except two rows the humans failed
        label = "pass" if answer in LABELS and i not in (4, 8) else "fail"
        rows.append({"id": f"j{i}", "input": f"review {i}", "output": answer, "verdict": label})
    path = tmp_path / "labelled.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_judge_check_reports_tpr_and_tnr(fake: FakeModel, tmp_path: Path) -> None:
    path = write_labelled(tmp_path)
    args = [
        "judge-check",
        str(path),
        "--judge",
        "fake/judge",
        "--label-field",
        "verdict",
        "--run-dir",
        str(tmp_path / "r"),
    ]
    result = CliRunner().invoke(build_cli(), [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["n"] == 20 and report["failed"] == 0
    # judge passes every one-word answer: all human passes caught, the two human fails missed
    assert report["tpr"] == 1.0
    negatives = report["true_neg"] + report["false_pos"]
    assert report["false_pos"] == 2 and report["tnr"] == pytest.approx((negatives - 2) / negatives)
    assert {d["id"] for d in report["disagreements"]} == {"j4", "j8"}
    text = CliRunner().invoke(build_cli(), args, catch_exceptions=False)
    assert "TPR" in text.output and "TNR" in text.output


def test_judge_check_refuses_unreadable_labels(fake: FakeModel, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        json.dumps({"input": "x", "output": "y", "verdict": "maybe"}) + "\n", encoding="utf-8"
    )
    result = CliRunner().invoke(
        build_cli(), ["judge-check", str(path), "--judge", "fake/judge", "--label-field", "verdict"]
    )
    assert result.exit_code != 0 and "'maybe' is not pass/fail" in result.output
