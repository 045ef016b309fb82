"""How far a judge can be trusted (reflex/judging/agreement.py): TPR and TNR against human
pass/fail labels, failed judgements apart, the disagreements listed, labels read leniently."""

from __future__ import annotations

from reflex.judging.agreement import JudgeAgreement, read_label
from reflex.types import Score


def test_rates_count_each_human_label_against_the_judge_s_pass_mark() -> None:
    agreement = JudgeAgreement(threshold=0.5)
    for i, (label, value) in enumerate([(True, 0.9), (True, 0.5), (True, 0.2), (False, 0.1)]):
        agreement.add(f"r{i}", label, Score(value, feedback="why"))
    agreement.add("r4", False, Score(0.7))
    agreement.add("r5", True, Score(0.0, error="unusable reply"))
    assert (agreement.tpr, agreement.tnr) == (2 / 3, 1 / 2)
    assert agreement.n == 5 and agreement.failed == 1  # a failed judgement counts in neither
    assert agreement.accuracy == 3 / 5
    assert [d["id"] for d in agreement.disagreements] == ["r2", "r4"]
    assert agreement.disagreements[0] == {
        "id": "r2",
        "label": "pass",
        "score": 0.2,
        "feedback": "why",
    }
    assert agreement.to_dict()["false_pos"] == 1


def test_no_labels_of_a_kind_leaves_its_rate_undefined() -> None:
    agreement = JudgeAgreement(threshold=0.5)
    agreement.add("r0", True, Score(1.0))
    assert (agreement.tpr, agreement.tnr) == (1.0, None)
    assert JudgeAgreement(threshold=0.5).accuracy is None


def test_labels_are_read_from_bools_numbers_and_words() -> None:
    for value in (True, 1, "pass", " Yes ", "correct", "OK"):
        assert read_label(value) is True, value
    for value in (False, 0, "fail", "No", "incorrect"):
        assert read_label(value) is False, value
    for value in ("maybe", None, 2, ""):
        assert read_label(value) is None, value
