"""Dataset records (data/records.py: the plain fast path equals the general one) and run records
(run/records.py: finding a run from what a user typed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reflex.data import records
from reflex.data.readers import Where
from reflex.errors import ConfigurationError
from reflex.run import records as run_records

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


def _run_folder(root: Path, run_id: str) -> Path:
    folder = root / "runs" / run_id
    folder.mkdir(parents=True)
    (folder / "run.json").write_text("{}", encoding="utf-8")
    return folder


def test_a_run_is_found_by_id_prefix_folder_or_result_json(tmp_path: Path) -> None:
    first = _run_folder(tmp_path, "20260101-aaaa")
    second = _run_folder(tmp_path, "20260102-bbbb")
    (second / "result.json").write_text("{}", encoding="utf-8")
    assert run_records.resolve_run("20260101-aaaa", tmp_path) == first
    assert run_records.resolve_run("20260102", tmp_path) == second  # a unique prefix
    assert run_records.resolve_run(str(second), tmp_path) == second
    assert run_records.resolve_run(str(second / "result.json"), tmp_path) == second


def test_an_ambiguous_or_unknown_run_is_refused_naming_the_latest(tmp_path: Path) -> None:
    _run_folder(tmp_path, "20260101-aaaa")
    _run_folder(tmp_path, "20260101-abcd")
    with pytest.raises(ConfigurationError, match=r"several runs matching '20260101-a'"):
        run_records.resolve_run("20260101-a", tmp_path)
    with pytest.raises(ConfigurationError, match=r"no run matching 'zz'.*latest: 20260101-aaaa"):
        run_records.resolve_run("zz", tmp_path)


def test_read_json_names_the_file_and_what_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    with pytest.raises(ConfigurationError, match=r"config\.json: no such file"):
        run_records.read_json(path)
    path.write_text("{torn", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"config\.json: not valid JSON"):
        run_records.read_json(path)
    path.write_text("[1]", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="expected a JSON object, got list"):
        run_records.read_json(path)
    path.write_text('{"a": 1}', encoding="utf-8")
    assert run_records.read_json(path) == {"a": 1}
