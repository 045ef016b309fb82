"""Writing files so that a reader never sees half of one (checkpoints, records, outputs)."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from reflex.errors import storage_error

__all__ = ["atomic_write_text", "file_problem"]


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so readers see either the old or the new file, never half.

    An OSError (disk full, read-only directory) becomes a one-line :class:`StorageError`; the
    old file stays as it was, so a failed checkpoint write never corrupts the last checkpoint.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise storage_error(path, exc) from exc


_KINDS = (
    (stat.S_ISDIR, "is a directory"),
    (stat.S_ISFIFO, "is a named pipe (FIFO), not a regular file: reading it would wait forever"),
    (stat.S_ISCHR, "is a character device (like /dev/null), not a regular file"),
    (stat.S_ISBLK, "is a block device, not a regular file"),
    (stat.S_ISSOCK, "is a socket, not a regular file"),
)


def file_problem(path: Path, what: str = "file") -> str | None:
    """Why ``path`` cannot be read as an input ``what`` (None: a readable regular file).

    Checked before any read: opening a FIFO blocks until a writer comes, and a FIFO, a device,
    a symlink loop or an unreadable file is not "not found".
    """
    try:
        mode = path.stat().st_mode  # follows symlinks
    except FileNotFoundError:
        if path.is_symlink():
            return f"{what} is a symbolic link to a missing file ({os.readlink(path)})"
        return f"{what} not found; check the path and the working directory"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"{what} is a symbolic link loop; point it at the real file"
        return f"{what} cannot be read: {exc.strerror or exc}"
    except ValueError as exc:  # e.g. a NUL byte in the name
        return f"{what} is not a valid path: {exc}"
    for test, problem in _KINDS:
        if test(mode):
            return f"{what} {problem}"
    if not os.access(path, os.R_OK):
        return f"{what} cannot be read: permission denied"
    return None
