"""Tests for reflex.data.dataset: every accepted format, the DataFrame boundary and every error."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reflex.data import dataset as ds
from reflex.data.dataset import Dataset, load_dataset
from reflex.errors import DatasetError
from reflex.types import Example

SHARED = Path("/work/shared/datasets")


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def load_error(path: Path, **kwargs: Any) -> str:
    with pytest.raises(DatasetError) as info:
        load_dataset(path, **kwargs)
    return str(info.value)


# --- formats ---------------------------------------------------------------------------------


def test_plain_input_ideal(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "plain.jsonl",
        [{"id": "a", "input": "2+2?", "ideal": "4", "metadata": {"k": 1}, "extra": "x"}],
    )
    ds = load_dataset(path)
    assert ds.name == "plain" and ds.source == str(path) and len(ds) == 1
    ex = ds[0]
    assert ex == Example(
        id="a",
        messages=({"role": "user", "content": "2+2?"},),
        ideal="4",
        metadata={"k": 1, "extra": "x"},
    )
    assert ex.input == "2+2?"


@pytest.mark.parametrize("key", ["output", "expected", "answer", "target"])
def test_plain_reference_aliases(key: str) -> None:
    ds = load_dataset([{"input": "q", key: "a"}])
    assert ds[0].ideal == "a"
    assert key not in ds[0].metadata


def test_ideal_wins_over_output_and_other_goes_to_metadata() -> None:
    ex = load_dataset([{"input": "q", "ideal": "a", "output": "b"}])[0]
    assert ex.ideal == "a" and ex.metadata == {"output": "b"}


def test_openai_messages_with_explicit_ideal() -> None:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    ex = load_dataset([{"id": 1, "messages": messages, "ideal": "x"}])[0]
    assert ex.id == "1"
    assert ex.messages == tuple(messages)
    assert ex.ideal == "x"


def test_openai_final_assistant_becomes_ideal() -> None:
    messages = [{"role": "user", "content": "u"}, {"role": "assistant", "content": "ans"}]
    ex = load_dataset([{"messages": messages}])[0]
    assert ex.messages == ({"role": "user", "content": "u"},)
    assert ex.ideal == "ans"


def test_openai_final_assistant_kept_with_explicit_reference() -> None:
    messages = [{"role": "user", "content": "u"}, {"role": "assistant", "content": "ans"}]
    ex = load_dataset([{"messages": messages, "answer": "real"}])[0]
    assert len(ex.messages) == 2 and ex.ideal == "real"


def test_sharegpt_conversations() -> None:
    conv = [
        {"from": "system", "value": "sys"},
        {"from": "human", "value": "hi"},
        {"from": "gpt", "value": "hello"},
    ]
    ex = load_dataset([{"conversations": conv}])[0]
    assert ex.messages == ({"role": "system", "content": "sys"}, {"role": "user", "content": "hi"})
    assert ex.ideal == "hello"


def test_alpaca_with_and_without_input() -> None:
    ds = load_dataset(
        [
            {"instruction": "Translate", "input": "bonjour", "output": "hello"},
            {"instruction": "Say hi", "input": "", "output": "hi"},
        ]
    )
    assert ds[0].input == "Translate\n\nbonjour" and ds[0].ideal == "hello"
    assert ds[1].input == "Say hi" and ds[1].ideal == "hi"
    assert ds[0].metadata == {}


def test_custom_fields(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [{"question": "q", "label": "l", "input": "other"}])
    ex = load_dataset(path, input_field="question", output_field="label")[0]
    assert ex.input == "q" and ex.ideal == "l" and ex.metadata == {"input": "other"}


def test_output_field_with_messages() -> None:
    ex = load_dataset(
        [{"messages": [{"role": "user", "content": "u"}], "gold": "g"}], output_field="gold"
    )[0]
    assert ex.ideal == "g"


def test_output_field_in_no_record_is_an_error(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "x.jsonl", [{"input": "q", "ideal": "a"}])
    message = load_error(path, output_field="labl")
    assert "x.jsonl" in message and "'labl'" in message


def test_null_reference_and_missing_reference() -> None:
    ds = load_dataset([{"input": "a", "ideal": None}, {"input": "b"}])
    assert [e.ideal for e in ds] == [None, None]
    assert ds.with_references == 0


def test_number_references_become_strings() -> None:
    ds = load_dataset(
        [{"input": "a", "ideal": 109}, {"input": "b", "ideal": 2.5}, {"input": "c", "ideal": True}]
    )
    assert [e.ideal for e in ds] == ["109", "2.5", "true"]


def test_content_hash_id_is_stable() -> None:
    first = load_dataset([{"input": "a", "ideal": "1"}])[0].id
    again = load_dataset([{"ideal": "1", "input": "a"}])[0].id
    assert first == again and len(first) == 16
    assert load_dataset([{"input": "a", "ideal": "2"}])[0].id != first


def test_split_field_normalised() -> None:
    ds = load_dataset(
        [
            {"input": "a", "split": "validation"},
            {"input": "b", "split": "Train"},
            {"input": "c", "split": None},
        ]
    )
    assert [e.split for e in ds] == ["val", "train", None]


def test_blank_lines_skipped_and_bom_stripped(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    body = '\n{"id": "a", "input": "x"}\n\n   \n{"id": "b", "input": "y"}\n'
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    assert load_dataset(path).ids == ["a", "b"]


def test_bom_on_first_record_line(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "input": "x"}\r\n')
    assert load_dataset(path).ids == ["a"]


def test_unknown_suffix_sniffed_as_jsonl(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.txt", [{"input": "x"}])
    assert len(load_dataset(path)) == 1


def test_json_suffix_is_lines(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.json", [{"input": "x"}, {"input": "y"}])
    assert len(load_dataset(path)) == 2


def test_shared_dataset_loads() -> None:
    ds = load_dataset(SHARED / "vader_tweets.jsonl")
    assert len(ds) > 1000 and ds.with_references == len(ds)
    assert ds.by_id("vader_tweets-0002").metadata["variant_of"] == "vader_tweets-0002"


# --- CSV ---------------------------------------------------------------------------------------


def test_csv_values_stay_strings(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text('id,input,ideal,note\n007,"a, b",NA,None\n8,"line1\nline2",,x\n')
    ds = load_dataset(path)
    assert ds.ids == ["007", "8"]
    assert ds[0].input == "a, b" and ds[0].ideal == "NA" and ds[0].metadata == {"note": "None"}
    assert ds[1].input == "line1\nline2" and ds[1].ideal is None


def test_csv_bom_crlf_and_custom_columns(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_bytes(b"\xef\xbb\xbfquestion,label\r\nq1,1\r\n\r\nq2,2\r\n")
    ds = load_dataset(path, input_field="question", output_field="label")
    assert [(e.input, e.ideal) for e in ds] == [("q1", "1"), ("q2", "2")]


def test_csv_alpaca_and_metadata_column(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text('instruction,input,output,metadata\ndo,it,done,"{""k"": 1}"\n')
    ex = load_dataset(path)[0]
    assert ex.input == "do\n\nit" and ex.ideal == "done" and ex.metadata == {"k": 1}


def test_csv_wrong_column_count_names_line(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text('input,ideal\n"multi\nline",a\nx,y,z\n')
    message = load_error(path)
    assert f"{path}:4:" in message and "3 columns" in message


def test_csv_missing_input_column(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("question,answer\nq,a\n")
    message = load_error(path)
    assert f"{path}:1:" in message and "input column" in message and "--input-field" in message


def test_csv_empty_and_header_only(tmp_path: Path) -> None:
    empty = tmp_path / "e.csv"
    empty.write_text("\n\n")
    assert f"{empty}:1:" in load_error(empty)
    header = tmp_path / "h.csv"
    header.write_text("input,ideal\n")
    assert f"{header}:1:" in load_error(header)


def test_csv_non_utf8(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_bytes(b"input,ideal\nok,1\ncaf\xe9,2\n")
    message = load_error(path)
    assert f"{path}:3:" in message and "re-save the file as UTF-8" in message


# --- DataFrame ---------------------------------------------------------------------------------


def test_dataframe_input_maps_nan_to_none() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {"id": [1, 2], "input": ["a", "b"], "ideal": ["x", None], "score": [0.5, float("nan")]}
    )
    ds = load_dataset(frame)
    assert ds.name == "dataframe" and ds.source is None
    assert ds.ids == ["1", "2"]
    assert [e.ideal for e in ds] == ["x", None]
    assert ds[0].metadata == {"score": 0.5} and ds[1].metadata == {"score": None}
    assert type(ds[0].metadata["score"]) is float
    json.dumps(ds.to_records(), allow_nan=False)


def test_dataframe_bad_input_type_names_row() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"input": ["a", None]})
    with pytest.raises(DatasetError, match=r"<dataframe>:2: .*'input'.*null"):
        load_dataset(frame)


# A DataFrame is recognised by duck typing (``to_dict("records")``), so no core module needs
# pandas: it is a dependency of the mlflow extra only. Every core and plugin module is imported
# and a frame-like object loaded, in a fresh interpreter, with pandas never imported.
_NO_PANDAS = """
import importlib, pkgutil, sys
import reflex, reflex_metrics, reflex_strategies
for package in (reflex, reflex_metrics, reflex_strategies):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(module.name)

class Frame:
    def to_dict(self, orient):
        assert orient == "records"
        return [{"input": "a", "ideal": float("nan")}]

dataset = reflex.load_dataset(Frame())
assert dataset[0].ideal is None, dataset[0]
print("pandas" in sys.modules)
"""


def test_no_core_module_imports_pandas() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _NO_PANDAS], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


# --- Dataset API -------------------------------------------------------------------------------


def test_dataset_api_and_round_trip() -> None:
    ds = load_dataset(
        [
            {"id": "a", "input": "x", "ideal": "1", "split": "test", "metadata": {"m": 1}},
            {"id": "b", "messages": [{"role": "user", "content": "y"}], "ideal": None},
        ],
        name="mine",
    )
    assert ds.name == "mine" and ds.ids == ["a", "b"] and [e.id for e in ds] == ["a", "b"]
    assert ds.by_id("b") is ds[1] and ds[-1].id == "b"
    assert ds.with_references == 1
    with pytest.raises(KeyError):
        ds.by_id("zzz")
    again = load_dataset(ds.to_records())
    assert [e for e in again] == [e for e in ds]
    assert again.fingerprint() == ds.fingerprint()


def test_fingerprint_stable_and_sensitive() -> None:
    rows = [{"id": "a", "input": "x", "ideal": "1"}, {"id": "b", "input": "y", "ideal": "2"}]
    fp = load_dataset(rows).fingerprint()
    assert fp == load_dataset(list(reversed(rows))).fingerprint()
    # Pinned: the fingerprint must not change between runs or Python versions.
    assert fp == "0f5390b9c64eaec8e049f60ec1bd9ff927648d254e290eaad506c0a78ae1f4e3"
    changed = [dict(rows[0], ideal="9"), rows[1]]
    assert load_dataset(changed).fingerprint() != fp
    meta_only = [dict(rows[0], metadata={"x": 1}), rows[1]]
    assert load_dataset(meta_only).fingerprint() == fp


def test_dataset_rejects_duplicate_ids() -> None:
    ex = Example(id="a", messages=({"role": "user", "content": "x"},))
    with pytest.raises(DatasetError, match="duplicate id 'a'"):
        Dataset([ex, ex])


# --- errors ------------------------------------------------------------------------------------


def test_file_not_found(tmp_path: Path) -> None:
    message = load_error(tmp_path / "missing.jsonl")
    assert "missing.jsonl" in message and "not found" in message


def test_directory(tmp_path: Path) -> None:
    assert "directory" in load_error(tmp_path)


@pytest.mark.parametrize("content", ["", "\n\n   \n"])
def test_empty_file(tmp_path: Path, content: str) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(content)
    message = load_error(path)
    assert f"{path}:1:" in message and "empty" in message


def test_invalid_json_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"input": "a"}\n\n{"input": "b",}\n')
    message = load_error(path)
    assert f"{path}:3: invalid JSON" in message


def test_line_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "arr.jsonl"
    path.write_text('{"input": "a"}\n[1, 2]\n')
    message = load_error(path)
    assert f"{path}:2:" in message and "not a JSON object" in message and "array" in message


def test_missing_input_lists_schemas(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "m.jsonl", [{"input": "a"}, {"question": "q"}])
    message = load_error(path)
    assert f"{path}:2:" in message
    for word in ("messages", "conversations", "instruction", "'input'", "--input-field"):
        assert word in message


def test_missing_custom_input_field(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "m.jsonl", [{"input": "a"}])
    message = load_error(path, input_field="question")
    assert f"{path}:1:" in message and "'question'" in message


@pytest.mark.parametrize(
    ("value", "kind"), [(7, "int"), (["a"], "array"), (None, "null"), ({"a": 1}, "object")]
)
def test_input_not_a_string(tmp_path: Path, value: Any, kind: str) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [{"input": "ok"}, {"input": value}])
    message = load_error(path)
    assert f"{path}:2:" in message and "'input'" in message and kind in message


def test_reference_of_bad_type(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [{"input": "ok", "ideal": ["x"]}])
    message = load_error(path)
    assert f"{path}:1:" in message and "'ideal'" in message and "array" in message


@pytest.mark.parametrize(
    "record",
    [
        {"messages": []},
        {"messages": "hi"},
        {"messages": [{"role": "user"}]},
        {"messages": [{"role": "user", "content": None}]},
        {"messages": [{"role": "assistant", "content": "only"}]},
        {"conversations": [{"from": "robot", "value": "x"}]},
        {"instruction": 3},
        {"instruction": "x", "input": 4},
        {"input": "x", "metadata": "notobj"},
        {"input": "x", "id": 1.5},
        {"input": "x", "id": ""},
    ],
)
def test_malformed_records(tmp_path: Path, record: dict[str, Any]) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", [{"input": "fine"}, record])
    assert f"{path}:2:" in load_error(path)


def test_non_utf8_line(tmp_path: Path) -> None:
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b'{"input": "ok"}\n{"input": "caf\xe9"}\n')
    message = load_error(path)
    assert f"{path}:2:" in message and "re-save the file as UTF-8" in message


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "d.jsonl", [{"id": "x", "input": "a"}, {"input": "b"}, {"id": "x", "input": "c"}]
    )
    message = load_error(path)
    assert f"{path}:3:" in message and "line 1" in message and "'x'" in message


def test_duplicate_content_rows_collide(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"input": "a"}, {"input": "a"}])
    assert f"{path}:2: duplicate id" in load_error(path)


def test_bad_split_value(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [{"input": "a", "split": "dev"}])
    message = load_error(path)
    assert f"{path}:1:" in message and "'dev'" in message
    assert "train" in message and "val" in message and "test" in message


def test_unknown_format(tmp_path: Path) -> None:
    path = tmp_path / "data.xlsx"
    path.write_bytes(b"PK\x03\x04 binary stuff\n")
    message = load_error(path)
    assert f"{path}:1:" in message and "unknown format" in message


def test_unknown_input_type() -> None:
    with pytest.raises(DatasetError, match="unknown dataset format"):
        load_dataset(42)


def test_empty_records_list() -> None:
    with pytest.raises(DatasetError, match="no records"):
        load_dataset([])


def test_record_list_errors_name_record_number() -> None:
    with pytest.raises(DatasetError, match=r"<records>:2: .*not a JSON object"):
        load_dataset([{"input": "a"}, "oops"])


def test_nothing_half_loaded(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "h.jsonl", [{"input": str(i)} for i in range(50)] + [{"x": 1}])
    assert f"{path}:51:" in load_error(path)


def test_bad_plain_records_still_get_the_general_error() -> None:
    with pytest.raises(DatasetError, match="field 'id' must be a non-empty string"):
        ds.load_dataset([{"id": "", "input": "q"}])
    with pytest.raises(DatasetError, match=r":2: duplicate id 'a' \(also on line 1\)"):
        ds.load_dataset([{"id": "a", "input": "q"}, {"id": "a", "input": "r"}])


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
