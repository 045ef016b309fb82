"""One writer per run directory: an exclusive lock held while a run is resumed.

Two ``--resume`` of one killed run at once both read its state before either wrote a new pid,
so both went on and every event was written twice. The resume now takes ``fcntl.flock`` on
``<run>/.lock`` before it reads the run's state and holds it until the run ends; the kernel
drops the lock when the process dies, however it dies, so a killed resume never leaves the run
locked. The file is a dotfile (not part of the sealed record) holding the holder's pid, for the
refusal's message. Only the writing path creates it: ``show``, ``verify``, ``runs``, ``export``
and ``report`` never do.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from reflex.errors import ConfigurationError

__all__ = ["LOCK_FILE", "locked_run"]

LOCK_FILE = ".lock"


@contextlib.contextmanager
def locked_run(path: Path) -> Iterator[None]:
    """Hold run directory ``path`` for this process; ConfigurationError, at once, when another
    process holds it. A directory that does not exist is not locked (the caller reports it)."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): one writer is the user's to ensure
        yield
        return
    if not path.is_dir():
        yield
        return
    fd = os.open(path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise ConfigurationError(
                f"run {path.name} is being resumed by another process (pid {holder}): wait "
                "for it to end, or stop it and then use --resume"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        os.close(fd)
