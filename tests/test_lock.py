"""One writer per run directory (reflex/run/lock.py): the resume lock is real ``flock``, refused
at once with the holder's pid, released when the holder ends."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reflex.errors import ConfigurationError
from reflex.run.lock import LOCK_FILE, locked_run


def test_a_held_run_is_refused_at_once_naming_the_holder(tmp_path: Path) -> None:
    run = tmp_path / "run-1"
    run.mkdir()
    with locked_run(run):
        assert (run / LOCK_FILE).read_text(encoding="ascii") == f"{os.getpid()}\n"
        # flock is per open file: a second open of the lock conflicts, even in this process.
        again = locked_run(run)
        with pytest.raises(ConfigurationError, match=rf"run-1 .*\(pid {os.getpid()}\)"):
            again.__enter__()
    with locked_run(run):  # released when the holder's block ended
        pass


def test_a_missing_run_directory_is_not_locked(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with locked_run(missing):
        pass
    assert not missing.exists()  # the caller reports the missing run; no lock file is made
