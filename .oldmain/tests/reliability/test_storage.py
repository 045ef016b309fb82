"""A run directory that cannot be written (read-only, disk full): one clear line, exit 2, the
last checkpoint intact, nothing claimed as success, and ``--resume`` once there is room."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows
from test_resume import START, reasoner_variants

import reflex.data.files
from reflex.cli import main
from reflex.errors import StorageError
from reflex.models.cache import CachedResponse, ResponseCache
from reflex.run.resume import list_runs
from reflex.testing import FakeModel, RecordingCallback


def cli_args(tmp_path: Path, run_dir: Path) -> list[str]:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_rows(40)), encoding="utf-8")
    prompt = tmp_path / "p.md"
    prompt.write_text(START + "\n", encoding="utf-8")
    return [
        "optimize",
        str(data),
        str(prompt),
        "-m",
        "fake/task",
        "-s",
        "instructions",
        "--max-iterations",
        "3",
        "--run-dir",
        str(run_dir),
    ]


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main(args)
    return int(done.value.code or 0), capsys.readouterr().err.strip().splitlines()


def test_unwritable_run_dir_fails_before_any_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the run directory should go", encoding="utf-8")
    fake = FakeModel(reasoner_variants).install()
    code, err = run_cli(cli_args(tmp_path, blocker / "runs"), capsys)
    assert code == 2 and fake.requests == []
    assert len(err) == 1 and err[0].startswith("error: cannot write ")
    assert str(blocker) in err[0] and "--run-dir" in err[0]


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only directories"
)
def test_read_only_run_dir_fails_before_any_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "ro"
    run_dir.mkdir()
    run_dir.chmod(stat.S_IRUSR | stat.S_IXUSR)
    fake = FakeModel(reasoner_variants).install()
    try:
        code, err = run_cli(cli_args(tmp_path, run_dir), capsys)
    finally:
        run_dir.chmod(stat.S_IRWXU)
    assert code == 2 and fake.requests == [] and len(err) == 1
    assert "cannot write" in err[0] and "writable" in err[0]


class DiskFull:
    """Makes every fsync in the run store fail with ENOSPC once ``full`` is set."""

    def __init__(self) -> None:
        self.full = False
        self._fsync = os.fsync

    def fsync(self, fd: int) -> None:
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        self._fsync(fd)


def test_disk_full_mid_run_keeps_the_checkpoint_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    disk = DiskFull()
    monkeypatch.setattr(reflex.data.files.os, "fsync", disk.fsync)
    run_dir = tmp_path / "runs"
    args = cli_args(tmp_path, run_dir)
    saved: dict[str, Any] = {}

    class FillDisk(RecordingCallback):
        def on_iteration(self, record: Any) -> None:
            # The checkpoint for this iteration is on disk; the disk fills up right after.
            [run] = list_runs(run_dir)
            saved.update(json.loads((run.path / "checkpoint.json").read_text()))
            disk.full = True

    monkeypatch.setattr("reflex.cli.console.ConsoleReporter.on_iteration", FillDisk.on_iteration)
    FakeModel(reasoner_variants).install()
    code, err = run_cli(args, capsys)
    assert code == 2
    assert [line for line in err if line.startswith("error:")] == err[-1:]
    assert "cannot write" in err[-1] and "No space left on device" in err[-1]
    assert "free disk space" in err[-1] and "--resume" in err[-1]
    [run] = list_runs(run_dir)
    assert run.status != "completed"  # nothing claimed as success
    assert json.loads((run.path / "checkpoint.json").read_text()) == saved  # not corrupted
    assert not list(run.path.rglob("*.tmp"))

    disk.full = False
    monkeypatch.undo()
    FakeModel(reasoner_variants).install()
    code, err = run_cli([*args, "--resume"], capsys)
    assert code == 0, err
    assert list_runs(run_dir)[0].status == "completed"


def test_full_cache_database_is_a_storage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")

    def full(*args: Any) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(cache, "_put", full)
    with pytest.raises(StorageError, match=r"cache\.sqlite: database or disk is full; free disk"):
        cache.put("k", CachedResponse("text", 1, 1, None))
    cache.close()


def test_unopenable_cache_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "cache.sqlite").mkdir()  # a directory where the database file should be
    with pytest.raises(StorageError, match="cannot write"):
        ResponseCache(tmp_path / "cache.sqlite")
