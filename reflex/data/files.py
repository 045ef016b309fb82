"""Writing files so that a reader never sees half of one (checkpoints, records, outputs).

A new file gets the read/write bits of the folder it is written into (:func:`file_mode_in`):
a private run folder (0700) holds private files (0600), a shared one (0750) group-readable
ones (0640), an ordinary folder (0755) the usual 0644; the umask applies on top.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from reflex.errors import StorageError, storage_error

__all__ = [
    "atomic_write_text",
    "create_file",
    "file_mode_in",
    "file_problem",
    "make_dirs",
    "output_problem",
]

PRIVATE_DIR, SHARED_DIR = 0o700, 0o750  # a run folder: the owner only / the owner's group too


def file_mode_in(folder: Path) -> int:
    """The mode a new file in ``folder`` is created with: the folder's read/write bits
    (0700 -> 0600, 0750 -> 0640, 0755 -> 0644; 1777 /tmp -> 0666, less the umask)."""
    try:
        return stat.S_IMODE(folder.stat().st_mode) & 0o666
    except OSError:
        return 0o666


def make_dirs(path: Path, mode: int | None = None) -> None:
    """Create ``path`` and its missing parents, each with ``mode`` (None: the mode of the
    nearest folder that exists), less the umask. Existing folders are left as they are."""
    missing = []
    folder = path
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    if mode is None:
        mode = stat.S_IMODE(folder.stat().st_mode) & 0o777 if folder.exists() else 0o777
    for level in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            level.mkdir(mode=mode)


def create_file(path: Path, flags: int = os.O_WRONLY | os.O_APPEND) -> int:
    """Open ``path`` (created with :func:`file_mode_in` its folder's mode when missing); an fd."""
    return os.open(path, flags | os.O_CREAT, file_mode_in(path.parent))


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so readers see either the old or the new file, never half.

    An OSError (disk full, read-only directory) becomes a one-line :class:`StorageError`; the
    old file stays as it was, so a failed checkpoint write never corrupts the last checkpoint.
    """
    problem = output_problem(path)
    if problem is not None:  # os.replace would swap a FIFO or a device (/dev/null) for a file
        raise StorageError(f"{path}: {problem}", path=str(path))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        make_dirs(path.parent)
        fd = create_file(tmp, os.O_WRONLY | os.O_EXCL)
        with open(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise storage_error(path, exc) from exc


_LOOP = "is a symbolic link loop; point it at the real file"
_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISDIR, "is a directory"),
    (stat.S_ISFIFO, "is a named pipe (FIFO), not a regular file: opening it would wait forever"),
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
            return f"{what} {_LOOP}"
        return f"{what} cannot be read: {exc.strerror or exc}"
    except ValueError as exc:  # e.g. a NUL byte in the name
        return f"{what} is not a valid path: {exc}"
    kind = _kind_problem(mode, what)
    if kind is not None:
        return kind
    if not os.access(path, os.R_OK):
        return f"{what} cannot be read: permission denied"
    return None


def _kind_problem(mode: int, what: str, *, dir_ok: bool = False) -> str | None:
    """The line for a path of ``mode`` that is not a regular file (None: it is one)."""
    for test, problem in _KINDS[1:] if dir_ok else _KINDS:
        if test(mode):
            return f"{what} {problem}"
    return None


def output_problem(path: Path, what: str = "output file") -> str | None:
    """Why ``path`` cannot be written as an output ``what`` (None: a new file, or a regular file
    to replace). An existing FIFO, device or socket gets :func:`file_problem`'s own line: an
    atomic write would replace it with a regular file (as root, even ``/dev/null``)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"{what} {_LOOP}"
        return None  # the write itself says what is wrong (a missing folder is created)
    except ValueError as exc:
        return f"{what} is not a valid path: {exc}"
    return _kind_problem(mode, what, dir_ok=True)  # a directory: each caller says it its way
