"""Writing files so that a reader never sees half of one (checkpoints, records, outputs)."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from reflex.errors import storage_error

__all__ = ["atomic_write_text"]


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
