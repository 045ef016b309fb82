"""reflex.checks.confusion and reflex.checks.examples: label sets, matrices, flipped rows."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reflex.checks.confusion import OTHER, confusion, label_set, near_miss, normalise_label
from reflex.checks.examples import ExampleRow, change_of, compare_rows, label_matrices
from reflex.result import EvalSnapshot, Example, Sample

TOPICS = ["business", "science", "sports", "world"]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Sports", "sports"),
        ("  sports.  ", "sports"),
        ('"World"', "world"),
        ("sci  tech", "sci tech"),
        ("sports..", "sports."),  # one trailing period only, as exact_match
    ],
)
def test_labels_are_normalised_as_exact_match_compares(text: str, want: str) -> None:
    assert normalise_label(text) == want


def test_label_set_is_a_small_repeating_set_of_short_references() -> None:
    refs = ["Sports", "world", "sports", "World", None, "business", "business"]
    assert label_set(refs) == ["business", "sports", "world"]
    assert label_set(["a", "b", "c", "d"]) == []  # no label repeats: free answers
    assert label_set(["yes"] * 10) == []  # one label: nothing to confuse
    assert label_set([f"l{i}" for i in range(21)] * 3) == []  # more than 20 labels
    assert label_set([f"l{i}" for i in range(20)] * 3) == sorted(f"l{i}" for i in range(20))
    assert label_set(["a\nb", "c"] * 4) == []  # multi-line: not a label
    assert label_set(["x" * 65, "y"] * 4) == []  # long: free text
    assert label_set([]) == []


def test_matrix_counts_precision_recall_and_other() -> None:
    pairs = [
        ("pos", "pos"),
        ("pos", "Pos."),
        ("pos", "neg"),
        ("neg", "neg"),
        ("neg", "I think it is negative"),
        (None, "pos"),  # no reference: left out
        ("meh", "pos"),  # a reference outside the label set: left out
    ]
    matrix = confusion(pairs, ["neg", "pos"])
    assert matrix.columns == ("neg", "pos", OTHER)
    assert matrix.counts == ((1, 0, 1), (1, 2, 0))
    assert (matrix.n, matrix.skipped) == (5, 2)
    neg, pos = matrix.per_label()
    assert (neg.support, neg.predicted, neg.correct) == (2, 2, 1)
    assert (neg.precision, neg.recall) == (0.5, 0.5)
    assert (pos.precision, pos.recall) == (1.0, pytest.approx(2 / 3))
    assert matrix.accuracy == pytest.approx(3 / 5)
    assert matrix.count("neg", OTHER) == 1
    assert matrix.rows()[0] == {
        "reference": "neg",
        "answered: neg": 1,
        "answered: pos": 0,
        f"answered: {OTHER}": 1,
        "support": 2,
        "precision": 0.5,
        "recall": 0.5,
    }
    assert matrix.to_dict()["counts"] == [[1, 0, 1], [1, 2, 0]]


def test_no_other_column_when_every_answer_is_a_label() -> None:
    matrix = confusion([("a", "a"), ("b", "a")], ["a", "b"])
    assert matrix.columns == ("a", "b") and matrix.counts == ((1, 0), (1, 0))
    assert matrix.per_label()[1].precision is None  # "b" was never answered


def test_one_label_answered_for_most_rows_is_named() -> None:
    """The held-out topic task of issue 32: 76 of 100 rows answered "sports"."""
    pairs: list[tuple[str | None, str]] = []
    for i in range(100):
        reference = TOPICS[i % 4]
        pairs.append((reference, "sports" if i < 76 or reference == "sports" else reference))
    matrix = confusion(pairs, TOPICS)
    assert matrix.column_total("sports") == 76 + 6  # and the 6 sports rows past 76
    line = matrix.warning("the winner")
    assert line is not None and "'sports' for 82 of 100 rows (the references have 25)" in line
    # A class that really is most of the rows, answered right, is no warning.
    right = confusion([("a", "a")] * 70 + [("b", "b")] * 30, ["a", "b"])
    assert right.dominant() is None and right.warning("the winner") is None
    lost = confusion([("a", "whatever")] * 7 + [("b", "b")] * 3, ["a", "b"])
    assert lost.warning("the baseline") == (
        "the baseline answered outside the label set for 7 of 10 rows"
    )


@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c", None]), st.sampled_from(["a", "B", "c.", "z"])),
        max_size=40,
    )
)
def test_every_pair_is_counted_once(pairs: list[tuple[str | None, str]]) -> None:
    matrix = confusion(pairs, ["a", "b", "c"])
    assert matrix.n + matrix.skipped == len(pairs)
    stats = matrix.per_label()
    assert sum(s.support for s in stats) == matrix.n
    assert sum(s.predicted for s in stats) + (
        matrix.column_total(OTHER) if matrix.other else 0
    ) == (matrix.n)
    for s in stats:
        for value in (s.precision, s.recall):
            assert value is None or 0.0 <= value <= 1.0


def _snapshot(scores: dict[str, float | None], outputs: dict[str, str]) -> EvalSnapshot:
    samples = tuple(Sample(k, "m", outputs[k], v) for k, v in scores.items())
    return EvalSnapshot("p", "test", 0.0, {}, samples)


def test_rows_pair_baseline_and_final_with_flipped_rows_first() -> None:
    assert [change_of(0, 1), change_of(1, 0), change_of(1, 1), change_of(None, 1)] == [
        "improved",
        "regressed",
        "same",
        "unscored",
    ]
    ids = ["s1", "up", "down", "none", "s2"]
    base = _snapshot(
        {"s1": 1.0, "up": 0.0, "down": 1.0, "none": None, "s2": 0.0}, dict.fromkeys(ids, "x")
    )
    final = _snapshot(
        {"s1": 1.0, "up": 1.0, "down": 0.0, "none": 1.0, "s2": 0.0}, {i: f"answer {i}" for i in ids}
    )
    examples = {"up": Example("up", ({"role": "user", "content": "in up"},), "pos")}
    rows = compare_rows(base, final, examples)
    assert [(r.example_id, r.change) for r in rows] == [
        ("down", "regressed"),
        ("up", "improved"),
        ("none", "unscored"),
        ("s1", "same"),
        ("s2", "same"),
    ]
    up = rows[1]
    assert (up.input, up.reference, up.baseline_output, up.final_output) == (
        "in up",
        "pos",
        "x",
        "answer up",
    )
    assert rows[0].input is None and rows[0].reference is None  # not in the dataset
    no_base = compare_rows(None, final, {})
    assert {r.change for r in no_base} == {"unscored"} and no_base[0].baseline_output is None


def _row(ident: str, reference: str | None, before: str | None, after: str) -> ExampleRow:
    return ExampleRow(ident, "m", "in", reference, before, None, after, None, "unscored")


def test_label_matrices_only_for_label_tasks() -> None:
    rows = [_row("1", "pos", "pos", "neg"), _row("2", "neg", "x", "neg"), _row("3", None, "", "")]
    matrices = label_matrices(rows, ["pos", "neg", "pos", "neg"])
    assert list(matrices) == ["baseline", "final"]
    assert matrices["baseline"].counts == ((0, 0, 1), (0, 1, 0))  # neg, pos (+ other)
    assert matrices["final"].counts == ((1, 0), (1, 0))
    assert label_matrices(rows, ["free text one", "another answer"]) == {}
    only_final = label_matrices([_row("1", "pos", None, "pos")], ["pos", "neg"] * 2)
    assert list(only_final) == ["final"]
    assert label_matrices([_row("1", None, "a", "b")], ["pos", "neg"] * 2) == {}


@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ("sports", "sport"),
        ("technology", "tech"),
        ("The label is sport.", "sport"),
        ("Politcs", "politics"),
        ("weather", None),
        ("Sport.", None),  # in the label set once normalised: no miss at all
        ("", None),
    ],
)
def test_near_miss_names_the_label_an_answer_nearly_is(answer: str, label: str | None) -> None:
    assert near_miss(answer, ["politics", "sport", "tech"]) == label
