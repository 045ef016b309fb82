"""Hostile files are one error line (exit 2), never a traceback.

Each case used to end in a Python traceback: JSON nested 100,000 deep (RecursionError), a
5,000-digit integer (ValueError), a lone surrogate in an input (UnicodeEncodeError, after a
half-written run directory), a ``checkpoint.json`` with wrong types on ``--resume``, a
``record.sig.json`` that is not an object on ``verify``, a ``cache.sqlite`` with another schema.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import make_rows

from reflex.cli import main
from reflex.testing import FakeModel

ROWS = "".join(json.dumps(r) + "\n" for r in make_rows(30))
MODELS = ("-m", "fake/task", "--reasoning-model", "fake/reasoner", "--max-iterations", "1")
DEEP = '{"input": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
BIG_INT = '{"input": "x", "ideal": ' + "9" * 5000 + "}\n"
PIPELINE = ("--pipeline-file", "pipe.py")
SURROGATE = '{"id": "s1", "input": "bad \\ud800 here", "ideal": "a"}\n'


def one_line(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    lines = err.splitlines()
    assert exit_info.value.code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.jsonl").write_text(ROWS, encoding="utf-8")
    (tmp_path / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("first", "expect"),
    [
        (DEEP, "data.jsonl:1: invalid JSON: values nested too deeply"),
        (BIG_INT, "data.jsonl:1: invalid JSON: a number too long to read"),
        (SURROGATE, "data.jsonl:1: holds a lone surrogate (\\ud800)"),
    ],
    ids=["nested", "digits", "surrogate"],
)
def test_hostile_dataset_lines_are_one_error(
    first: str,
    expect: str,
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
    fake_model: FakeModel,
) -> None:
    (workdir / "data.jsonl").write_text(first + ROWS, encoding="utf-8")
    line = one_line(["optimize", "data.jsonl", "prompt.md", *MODELS], capsys)
    assert expect in line, line
    assert fake_model.requests == [] and not (workdir / ".reflex" / "runs").exists()


def test_hostile_inputs_file_lines_are_one_error(
    workdir: Path, capsys: pytest.CaptureFixture[str], fake_model: FakeModel
) -> None:
    (workdir / "inputs.jsonl").write_text(DEEP, encoding="utf-8")
    (workdir / "pipe.py").write_text("def run(prompt, input, call):\n    return input\n")
    line = one_line(
        ["optimize", "--inputs-file", "inputs.jsonl", "prompt.md", *PIPELINE, *MODELS],
        capsys,
    )
    assert "nested too deeply" in line, line


def _finished_run(workdir: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    with pytest.raises(SystemExit):
        main(["optimize", "data.jsonl", "prompt.md", *MODELS])
    capsys.readouterr()
    (run,) = (workdir / ".reflex" / "runs").iterdir()
    return run


def _interrupted(run: Path) -> None:
    """Make ``run`` look killed mid-way: no result.json, so --resume takes it."""
    (run / "result.json").unlink()


CHECKPOINTS: dict[str, Callable[[Path], None]] = {
    "a list": lambda run: (run / "checkpoint.json").write_text("[1, 2]"),
    "iterations a string": lambda run: (run / "checkpoint.json").write_text(
        json.dumps({"stage": "iteration", "iterations": "many", "elapsed_s": "soon"})
    ),
    "iteration records of the wrong shape": lambda run: (run / "checkpoint.json").write_text(
        json.dumps({"stage": "iteration", "iterations": [{"iteration": "x"}, 7]})
    ),
}


@pytest.mark.parametrize("case", list(CHECKPOINTS))
def test_a_checkpoint_with_wrong_types_is_one_error_on_resume(
    case: str, workdir: Path, capsys: pytest.CaptureFixture[str], fake_model: FakeModel
) -> None:
    run = _finished_run(workdir, capsys)
    _interrupted(run)
    CHECKPOINTS[case](run)
    paid = len(fake_model.requests)
    line = one_line(["optimize", "data.jsonl", "prompt.md", *MODELS, "--resume"], capsys)
    assert f"{run.name}" in line and "checkpoint.json" in line, line
    assert len(fake_model.requests) == paid  # refused before any call


@pytest.mark.parametrize("content", ["[]", '"sig"', "{", "null"])
def test_a_seal_that_is_not_an_object_is_one_error_on_verify(
    content: str, workdir: Path, capsys: pytest.CaptureFixture[str], fake_model: FakeModel
) -> None:
    run = _finished_run(workdir, capsys)
    (run / "record.sig.json").write_text(content, encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["verify", run.name])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and exit_info.value.code in (1, 2), out + err
    assert "record.sig.json" in out + err


def test_a_cache_with_another_schema_is_one_error(
    workdir: Path, capsys: pytest.CaptureFixture[str], fake_model: FakeModel
) -> None:
    (workdir / ".reflex").mkdir()
    db = sqlite3.connect(workdir / ".reflex" / "cache.sqlite")
    db.execute("create table responses (k integer primary key, v blob)")
    db.execute("create table meta (x)")
    db.commit()
    db.close()
    line = one_line(["optimize", "data.jsonl", "prompt.md", *MODELS], capsys)
    assert "cache.sqlite" in line and "delete" in line and "writable" not in line, line
    assert fake_model.requests == []
