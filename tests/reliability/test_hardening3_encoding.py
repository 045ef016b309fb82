"""A stray NUL byte is named, not blamed on UTF-16 (issue 29, item 13).

One NUL byte (0x00) in an otherwise good UTF-8 JSONL file used to say "the file looks like
UTF-16 without a byte-order mark"; in a CSV file it was read into a cell and sent to the model.
Now the message names the file, line, column and byte offset, says "a NUL byte (0x00)" and how
to delete it, before any model call; UTF-16 text (NULs on alternate bytes) is still called
UTF-16, with or without a byte-order mark.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_rows

from reflex.cli import main
from reflex.data.dataset import load_dataset
from reflex.errors import DatasetError
from reflex.testing import FakeModel

MODELS = ("-m", "fake/task", "--reasoning-model", "fake/reasoner", "--max-iterations", "1")
GOOD = "".join(json.dumps(row) + "\n" for row in make_rows(3)).encode()
CSV_HEAD = b"input,ideal\n"


def error_line(
    name: str, content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> str:
    (tmp_path / name).write_bytes(content)
    (tmp_path / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["optimize", str(tmp_path / name), str(tmp_path / "prompt.md"), *MODELS])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and len(err.splitlines()) == 1, err
    assert "Traceback" not in out + err and err.startswith("error: ")
    return err.strip()


def test_a_stray_nul_in_jsonl_is_named_with_line_column_and_offset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_model: FakeModel
) -> None:
    bad = b'{"input": "caf\x00e", "ideal": "x"}\n'
    line = error_line("d.jsonl", GOOD + bad + GOOD, tmp_path, capsys)
    offset = len(GOOD) + bad.index(b"\x00")
    assert "d.jsonl:4: a NUL byte (0x00) at column 15" in line, line
    assert f"byte offset {offset} of the file" in line and "delete it" in line, line
    assert "UTF-16" not in line and fake_model.requests == []


def test_a_zero_filled_tail_is_nul_bytes_not_utf16(tmp_path: Path) -> None:
    (tmp_path / "z.jsonl").write_bytes(GOOD + b"\x00" * 512 + b"\n")
    with pytest.raises(DatasetError) as info:
        load_dataset(tmp_path / "z.jsonl")
    message = str(info.value)
    assert "z.jsonl:4: a NUL byte (0x00) at column 1" in message, message
    assert "one of 512 on this line" in message and "UTF-16" not in message, message


def test_the_column_counts_characters_and_the_offset_counts_bytes(tmp_path: Path) -> None:
    (tmp_path / "u.jsonl").write_bytes('{"input": "é\x00"}\n'.encode())
    with pytest.raises(DatasetError) as info:
        load_dataset(tmp_path / "u.jsonl")
    assert "u.jsonl:1: a NUL byte (0x00) at column 13 (byte offset 13 " in str(info.value)


def test_a_stray_nul_in_csv_is_refused_not_read_into_a_cell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_model: FakeModel
) -> None:
    content = CSV_HEAD + b"good,x\nba\x00d,y\nfine,z\n"
    line = error_line("d.csv", content, tmp_path, capsys)
    assert "d.csv:3: a NUL byte (0x00) at column 3" in line, line
    offset = content.index(b"\x00")
    assert f"byte offset {offset} of the file" in line, line
    assert fake_model.requests == []


@pytest.mark.parametrize(
    ("name", "content", "expect"),
    [
        ("le.jsonl", GOOD.decode().encode("utf-16-le"), "UTF-16 without a byte-order mark"),
        ("be.jsonl", GOOD.decode().encode("utf-16-be"), "UTF-16 without a byte-order mark"),
        ("bom.jsonl", GOOD.decode().encode("utf-16"), "UTF-16 or UTF-32 (it starts with"),
        ("le.csv", (CSV_HEAD + b"a,b\n").decode().encode("utf-16-le"), "UTF-16 without a"),
        ("bom.csv", (CSV_HEAD + b"a,b\n").decode().encode("utf-16"), "UTF-16 or UTF-32 (it"),
    ],
    ids=["jsonl-le", "jsonl-be", "jsonl-bom", "csv-le", "csv-bom"],
)
def test_utf16_is_still_called_utf16(
    name: str, content: bytes, expect: str, tmp_path: Path
) -> None:
    (tmp_path / name).write_bytes(content)
    with pytest.raises(DatasetError) as info:
        load_dataset(tmp_path / name)
    message = str(info.value)
    assert f"{name}:1: " in message and expect in message and "re-save" in message, message
    assert "NUL byte (0x00) at" not in message
