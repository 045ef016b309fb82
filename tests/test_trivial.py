"""A label task's constant answer and prior against a prompt (reflex.checks.trivial)."""

from __future__ import annotations

import pytest

from reflex.checks.trivial import label_baseline, label_warnings, snapshot_check
from reflex.result import Sample

REFS = ["sport"] * 6 + ["tech"] * 3 + ["politics"] * 3


def test_the_constant_is_the_majority_share_and_the_prior_the_squared_shares() -> None:
    baseline = label_baseline(REFS)
    assert baseline is not None
    assert baseline.majority == "sport" and baseline.constant == pytest.approx(0.5)
    assert baseline.prior == pytest.approx(0.25 + 0.0625 + 0.0625)


def test_free_text_is_not_a_label_task() -> None:
    assert label_baseline([f"answer {i}" for i in range(12)]) is None


def test_answering_one_label_everywhere_collapses_and_does_not_beat_the_constant() -> None:
    baseline = label_baseline(REFS)
    assert baseline is not None
    check = baseline.check((ref, "sport") for ref in REFS)
    assert check.accuracy == pytest.approx(0.5)
    assert check.collapsed == "sport"
    assert not check.beats_constant and check.trivial


def test_a_prompt_that_reads_the_inputs_beats_the_constant() -> None:
    baseline = label_baseline(REFS)
    assert baseline is not None
    answers = [*REFS[:9], "tech", "politics", "politics"]
    check = baseline.check(zip(REFS, answers, strict=True))
    assert check.accuracy == pytest.approx(11 / 12)
    assert check.beats_constant and not check.trivial and check.collapsed is None


def test_answers_outside_the_label_set_are_counted_with_their_near_label() -> None:
    baseline = label_baseline(REFS)
    assert baseline is not None
    answers = ["sports"] * 3 + ["technology", "weather"] + REFS[5:]
    check = baseline.check(zip(REFS, answers, strict=True))
    assert check.off_label == {"sports": 3, "technology": 1, "weather": 1}
    assert check.near_misses == {"sports": "sport", "technology": "tech"}
    assert check.off_label_rows == 5 and check.near_miss_rows == 4


def test_snapshot_check_and_its_warnings() -> None:
    refs = {f"r{i}": ref for i, ref in enumerate(REFS)}
    samples = [Sample(f"r{i}", "m", "sport", 0.0) for i in range(12)]
    check = snapshot_check(refs, ["politics", "sport", "tech"], samples)
    assert (
        check is not None
        and check["trivial"]
        and check["shares"]
        == {
            "politics": 0.25,
            "sport": 0.5,
            "tech": 0.25,
        }
    )
    [warning] = label_warnings(check)
    assert warning["kind"] == "trivial_winner" and "'sport'" in warning["message"]
    samples = [Sample(f"r{i}", "m", "sports" if i < 2 else REFS[i], 0.0) for i in range(12)]
    check = snapshot_check(refs, ["politics", "sport", "tech"], samples)
    assert check is not None
    kinds = [w["kind"] for w in label_warnings(check, "val", "the prompt")]
    assert kinds == ["off_label_answers"]
    assert "'sports' for 'sport'" in label_warnings(check)[0]["message"]
    assert label_warnings(None) == []
