"""The fast paths of dataset loading (issue 21, item 4) read exactly what the general path reads."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from reflex.data import dataset as ds
from reflex.data import readers, records
from reflex.data.readers import Where
from reflex.errors import DatasetError

RECORDS = [
    {"id": "a", "input": "q", "ideal": "x"},
    {"id": "b", "input": "q", "ideal": None, "extra": [1, 2], "tag": "t"},
    {"id": "c", "input": "q"},
    {"id": "d", "input": "q", "output": "o", "answer": "ignored: output comes first"},
    {"id": "e", "input": "q", "target": "t"},
    {"id": "f", "input": "q", "ideal": 3},  # a number: general rules
    {"id": "g", "input": "q", "ideal": True},
    {"id": 7, "input": "q", "ideal": "x"},  # an integer id
    {"input": "q", "ideal": "x"},  # no id: a hash
    {"id": "h", "input": "q", "ideal": "x", "split": "Validation"},
    {"id": "i", "input": "q", "ideal": "x", "metadata": {"k": 1}, "k2": 2},
    {"id": "j", "input": "q", "instruction": "do", "output": "o"},  # Alpaca wins
    {"id": "k", "messages": [{"role": "user", "content": "hi"}], "input": "q"},
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: str(r.get("id", "none")))
@pytest.mark.parametrize("input_field", [None, "input"])
def test_the_plain_fast_path_builds_what_the_general_path_builds(
    record: dict[str, object], input_field: str | None
) -> None:
    where = Where("f.jsonl", 1)
    general = records.parse_any(dict(record), where, input_field, None)
    assert records.parse_record(dict(record), where, input_field, None) == general
    fast = records.parse_plain(dict(record), input_field)
    assert fast is None or fast == general


def test_bad_plain_records_still_get_the_general_error() -> None:
    with pytest.raises(DatasetError, match="field 'id' must be a non-empty string"):
        ds.load_dataset([{"id": "", "input": "q"}])
    with pytest.raises(DatasetError, match=r":2: duplicate id 'a' \(also on line 1\)"):
        ds.load_dataset([{"id": "a", "input": "q"}, {"id": "a", "input": "r"}])


@pytest.mark.parametrize(
    "text",
    ['{"a": 1}\n', '  {"a": 1}\n', '{"a": 1}  \r\n', '{"a": NaN}', "[1, 2]\n", '"s"', "3\n"],
)
def test_line_parsing_matches_json_loads(text: str) -> None:
    assert json.dumps(readers._loads(text)) == json.dumps(json.loads(text))


@pytest.mark.parametrize("text", ['{"a": 1} {"b": 2}\n', '{"a": 1', "{'a': 1}\n", "\n"])
def test_line_errors_are_json_loads_errors(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as ours:
        readers._loads(text)
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(text)
    assert (ours.value.msg, ours.value.colno) == (theirs.value.msg, theirs.value.colno)


def test_collection_is_switched_back_on_after_loading(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text('{"id": "a", "input": "q"}\n', encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "input": "q"}\n{broken\n', encoding="utf-8")
    assert gc.isenabled()
    assert len(ds.load_dataset(good)) == 1
    assert gc.isenabled()
    with pytest.raises(DatasetError, match=":2: "):
        ds.load_dataset(bad)
    assert gc.isenabled()


def test_a_split_keeps_ids_and_lookups(tmp_path: Path) -> None:
    from reflex.data.splits import split_dataset

    data = ds.load_dataset([{"id": f"r{i}", "input": f"q{i}"} for i in range(50)])
    split = split_dataset(data, train=0.6, val=0.2, seed=3)
    for part in (split.train, split.val, split.test):
        assert [part.by_id(i).id for i in part.ids] == part.ids
        assert part.source == data.source
    assert sorted(split.train.ids + split.val.ids + split.test.ids) == sorted(data.ids)
