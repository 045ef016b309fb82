"""Tests for reflex.data.splits: determinism, disjointness, groups, forced splits and errors."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from reflex.data.dataset import Dataset, load_dataset
from reflex.data.splits import Split, split_dataset
from reflex.errors import ConfigurationError, DatasetError

VADER = Path("/work/shared/datasets/vader_tweets.jsonl")


def make(n: int, **extra: Any) -> Dataset:
    return load_dataset([{"id": f"r{i:03d}", "input": f"q{i}", **extra} for i in range(n)])


def all_ids(split: Split) -> list[str]:
    return split.train.ids + split.val.ids + split.test.ids


def test_default_fractions_sizes_and_disjoint() -> None:
    ds = make(100)
    split = split_dataset(ds)
    assert (len(split.train), len(split.val), len(split.test)) == (60, 20, 20)
    assert sorted(all_ids(split)) == sorted(ds.ids)
    assert len(set(all_ids(split))) == 100
    assert split.train.name.endswith("train") and split.test.source == ds.source


def test_same_seed_same_split_other_seed_differs() -> None:
    ds = make(50)
    assert split_dataset(ds, seed=3).ids() == split_dataset(ds, seed=3).ids()
    assert split_dataset(ds, seed=3).ids() != split_dataset(ds, seed=4).ids()


def test_independent_of_file_order() -> None:
    rows = [{"id": f"r{i}", "input": f"q{i}"} for i in range(40)]
    shuffled = rows[:]
    random.Random(1).shuffle(shuffled)
    first = split_dataset(load_dataset(rows), seed=7).ids()
    second = split_dataset(load_dataset(shuffled), seed=7).ids()
    assert {k: sorted(v) for k, v in first.items()} == {k: sorted(v) for k, v in second.items()}


def test_rows_keep_dataset_order_within_a_split() -> None:
    ds = make(30)
    split = split_dataset(ds)
    for part in (split.train, split.val, split.test):
        assert part.ids == sorted(part.ids)


def test_explicit_test_fraction_and_zero_val() -> None:
    split = split_dataset(make(10), train=0.7, val=0.0, test=0.3)
    assert (len(split.train), len(split.val), len(split.test)) == (7, 0, 3)


def test_rounding_gives_train_the_rest() -> None:
    split = split_dataset(make(7))  # 0.2 * 7 = 1.4 -> 1 each for val/test
    assert (len(split.train), len(split.val), len(split.test)) == (5, 1, 1)


def test_per_record_split_field() -> None:
    rows = [{"id": f"f{i}", "input": "x", "split": "test"} for i in range(3)]
    rows += [{"id": "v0", "input": "x", "split": "validation"}]
    rows += [{"id": f"r{i}", "input": str(i)} for i in range(20)]
    split = split_dataset(load_dataset(rows), seed=5)
    assert {"f0", "f1", "f2"} <= set(split.test.ids)
    assert "v0" in split.val.ids
    free = [i for i in all_ids(split) if i.startswith("r")]
    assert len(free) == 20
    # the fractions apply to the 20 free rows: 4 to test, 4 to val
    assert len(split.test) == 3 + 4 and len(split.val) == 1 + 4


def test_all_rows_forced() -> None:
    rows = [{"id": "a", "input": "1", "split": "train"}, {"id": "b", "input": "2", "split": "test"}]
    split = split_dataset(load_dataset(rows), val=0.0, train=0.5)
    assert split.ids() == {"train": ["a"], "val": [], "test": ["b"]}


def test_group_key_keeps_groups_together() -> None:
    rows = [{"id": f"r{i}", "input": str(i), "metadata": {"g": i // 3}} for i in range(60)]
    rows += [{"id": f"solo{i}", "input": f"s{i}"} for i in range(10)]
    ds = load_dataset(rows)
    split = split_dataset(ds, seed=2, group_key="g")
    where = {i: name for name, ids in split.ids().items() for i in ids}
    for group in range(20):
        assert len({where[f"r{i}"] for i in range(group * 3, group * 3 + 3)}) == 1
    assert len(where) == 70
    assert split_dataset(ds, seed=2, group_key="g").ids() == split.ids()


def test_group_follows_a_forced_row() -> None:
    rows = [
        {"id": "a", "input": "1", "split": "test", "metadata": {"g": "x"}},
        {"id": "b", "input": "2", "metadata": {"g": "x"}},
    ]
    rows += [{"id": f"r{i}", "input": str(i)} for i in range(10)]
    split = split_dataset(load_dataset(rows), group_key="g")
    assert {"a", "b"} <= set(split.test.ids)


def test_group_with_conflicting_forced_splits() -> None:
    rows = [
        {"id": "a", "input": "1", "split": "test", "metadata": {"g": "x"}},
        {"id": "b", "input": "2", "split": "train", "metadata": {"g": "x"}},
    ]
    with pytest.raises(ConfigurationError, match="different splits"):
        split_dataset(load_dataset(rows), group_key="g")


def test_vader_variants_never_cross_splits() -> None:
    ds = load_dataset(VADER)
    split = split_dataset(ds, group_key="variant_of", seed=0)
    where = {i: name for name, ids in split.ids().items() for i in ids}
    assert len(where) == len(ds)
    groups: dict[str, set[str]] = {}
    for example in ds:
        key = example.metadata.get("variant_of")
        if key is not None:
            groups.setdefault(key, set()).add(where[example.id])
    assert groups and all(len(names) == 1 for names in groups.values())
    assert any(len([e for e in ds if e.metadata.get("variant_of") == k]) > 1 for k in groups)
    n = len(ds)
    assert abs(len(split.test) - 0.2 * n) < 0.02 * n
    assert abs(len(split.val) - 0.2 * n) < 0.02 * n


def test_unknown_group_key_lists_available_keys() -> None:
    ds = load_dataset([{"input": "a", "metadata": {"topic": "t", "lang": "en"}}])
    with pytest.raises(ConfigurationError) as info:
        split_dataset(ds, group_key="variant")
    message = str(info.value)
    assert "'variant'" in message and "lang, topic" in message


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"train": 0.8, "val": 0.3}, "test=-0.1"),
        ({"train": 1.2, "val": 0.0, "test": 0.1}, "train=1.2"),
        ({"train": 0.5, "val": 0.2, "test": 0.2}, "sum to 1"),
        ({"train": 0.8, "val": 0.2}, "test fraction must be greater than 0"),
        ({"train": 0.0, "val": 0.5, "test": 0.5}, "train fraction must be greater than 0"),
        ({"train": float("nan"), "val": 0.2, "test": 0.2}, "nan"),
    ],
)
def test_bad_fractions(kwargs: dict[str, float], needle: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        split_dataset(make(20), **kwargs)
    assert needle in str(info.value)


def test_fraction_sum_tolerance() -> None:
    split = split_dataset(make(10), train=0.7, val=0.1, test=0.2 + 1e-9)
    assert len(all_ids(split)) == 10


def test_too_small(tmp_path: Path) -> None:
    path = tmp_path / "tiny.jsonl"
    path.write_text('{"input": "a"}\n{"input": "b"}\n')
    with pytest.raises(DatasetError) as info:
        split_dataset(load_dataset(path))
    message = str(info.value)
    assert "tiny.jsonl" in message and "2 rows" in message and "too small" in message
    assert "train=0.6" in message and "add rows" in message


def test_too_small_because_of_groups() -> None:
    rows = [{"id": f"r{i}", "input": str(i), "metadata": {"g": "same"}} for i in range(10)]
    with pytest.raises(DatasetError, match="in 1 groups"):
        split_dataset(load_dataset(rows), group_key="g")


def test_from_ids_round_trip() -> None:
    ds = make(30)
    split = split_dataset(ds, seed=11)
    saved = split.ids()
    restored = Split.from_ids(ds, saved)
    assert restored.ids() == saved
    assert restored.train[0] is ds.by_id(saved["train"][0])


def test_from_ids_missing_id() -> None:
    ds = make(10)
    saved = split_dataset(ds).ids()
    saved["test"].append("gone")
    with pytest.raises(DatasetError, match="'gone'"):
        Split.from_ids(ds, saved)


def test_from_ids_overlap_and_missing_key() -> None:
    ds = make(10)
    saved = split_dataset(ds).ids()
    with pytest.raises(DatasetError, match="both"):
        Split.from_ids(ds, {**saved, "val": saved["val"] + saved["test"][:1]})
    with pytest.raises(DatasetError, match="no val list"):
        Split.from_ids(ds, {"train": saved["train"], "test": saved["test"]})


def test_from_ids_warns_about_unsaved_rows(caplog: pytest.LogCaptureFixture) -> None:
    ds = make(10)
    saved = split_dataset(ds).ids()
    saved["train"] = saved["train"][1:]
    Split.from_ids(ds, saved)
    assert "1 rows" in caplog.text
