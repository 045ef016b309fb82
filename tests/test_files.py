"""Writing files whole, with their folder's mode; what makes a path no input or output file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from reflex.data.files import (
    atomic_write_text,
    file_mode_in,
    file_problem,
    make_dirs,
    output_problem,
)
from reflex.errors import StorageError


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("folder", "file"), [(0o700, 0o600), (0o750, 0o640), (0o755, 0o644)])
def test_a_new_file_gets_its_folders_read_write_bits(
    tmp_path: Path, folder: int, file: int
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(folder)
    assert file_mode_in(home) == file
    old = os.umask(0)
    try:
        atomic_write_text(home / "out.json", "{}")
    finally:
        os.umask(old)
    assert _mode(home / "out.json") == file


def test_missing_folders_get_the_mode_of_the_nearest_existing_one(tmp_path: Path) -> None:
    tmp_path.chmod(0o750)
    old = os.umask(0)
    try:
        make_dirs(tmp_path / "a" / "b")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a") == _mode(tmp_path / "a" / "b") == 0o750


def test_an_atomic_write_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "checkpoint.json"
    atomic_write_text(target, "old")
    atomic_write_text(target, "new")
    assert target.read_text(encoding="utf-8") == "new"
    assert [p.name for p in target.parent.iterdir()] == ["checkpoint.json"]


def test_a_failed_write_keeps_the_old_file_and_says_storage(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()  # os.replace cannot put a file over a folder
    with pytest.raises(StorageError):
        atomic_write_text(target, "text")
    assert target.is_dir() and list(tmp_path.iterdir()) == [target]


def test_an_atomic_write_never_replaces_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(StorageError, match="named pipe"):
        atomic_write_text(fifo, "text")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_file_problem_names_what_the_path_is(tmp_path: Path) -> None:
    regular = tmp_path / "data.jsonl"
    regular.write_text("{}\n", encoding="utf-8")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "gone")
    assert file_problem(regular) is None
    assert file_problem(tmp_path / "nope", "dataset") == (
        "dataset not found; check the path and the working directory"
    )
    assert "named pipe (FIFO)" in (file_problem(fifo) or "")
    assert "is a directory" in (file_problem(tmp_path) or "")
    assert "symbolic link loop" in (file_problem(loop) or "")
    assert "link to a missing file" in (file_problem(dangling) or "")
    assert "character device" in (file_problem(Path("/dev/null")) or "")


def test_output_problem_allows_new_and_regular_files_and_folders(tmp_path: Path) -> None:
    regular = tmp_path / "best.md"
    regular.write_text("x", encoding="utf-8")
    assert output_problem(tmp_path / "new.md") is None
    assert output_problem(regular) is None
    assert output_problem(tmp_path) is None  # each caller words a folder its own way
    assert "character device" in (output_problem(Path("/dev/null"), "-o") or "")
    assert (output_problem(Path("/dev/null"), "-o") or "").startswith("-o ")
