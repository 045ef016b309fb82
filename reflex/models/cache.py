"""A durable response cache (sqlite) keyed by model, decoding parameters and the full messages
(and the endpoint the call goes to when a setting outside the spec chose it: models/target.py).

Only successful responses are stored, so a transient failure is never replayed. The cache is
shared by every run under one run directory, so re-running the same evaluation pays nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reflex.errors import StorageError, storage_error

__all__ = ["MAX_COUNT", "CachedResponse", "ResponseCache", "cache_key", "clip_count"]

_INSERT = "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)"
_Row = tuple[str, str, int, int, float | None, str | None]


@dataclass(frozen=True)
class CachedResponse:
    """What a cache hit returns: the text and the usage the original call reported."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    owner: str | None = None


def cache_key(
    namespace: str,
    model: str,
    params: Mapping[str, object],
    messages: Sequence[Mapping[str, object]],
) -> str:
    """sha256 over a canonical JSON of everything that determines the response."""
    payload = {"ns": namespace, "model": model, "params": dict(params), "messages": list(messages)}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


_COLUMNS = {"key", "text", "prompt_tokens", "completion_tokens", "cost"}
_SELECT = "SELECT text, prompt_tokens, completion_tokens, cost, owner FROM responses WHERE key = ?"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT NOT NULL,"
    " prompt_tokens INTEGER, completion_tokens INTEGER, cost REAL, owner TEXT)"
)


class _NotACache(Exception):
    """A sqlite file whose ``responses`` table is someone else's."""


def _create_like_folder(path: Path) -> None:
    """Create the empty cache file with its folder's read/write bits (0600 in a private run
    folder, as :func:`reflex.data.files.file_mode_in`); SQLite gives -wal/-shm the same."""
    mode = stat.S_IMODE(path.parent.stat().st_mode) & 0o666
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, mode))


class ResponseCache:
    """sqlite-backed cache; ``path=None`` keeps it in memory (for one process only)."""

    read_only = False  # a shared cache (reflex.models.shared_cache) is always written

    def __init__(self, path: Path | str | None, *, read_only: bool = False) -> None:
        path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        # Read-only (``export`` and the other commands that only read a run): nothing is written
        # next to the file, not even WAL files, so a read-only run directory works.
        self.read_only = read_only
        self._select = _SELECT
        try:
            self._db = self._open_read_only(path) if read_only else self._open(path)
        except _NotACache as exc:
            raise StorageError(
                f"{path} is not a usable response cache ({exc}); delete it (it only holds saved "
                "answers, which a new run pays for again) or pass --run-dir elsewhere",
                path=str(path),
            ) from None
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc) or "malformed" in str(exc):
                raise StorageError(
                    f"{path} is damaged ({exc}); delete it (it only holds saved answers, which "
                    "a new run pays for again) or pass --run-dir elsewhere",
                    path=str(path),
                ) from None
            raise storage_error(path or ":memory:", exc) from exc
        except OSError as exc:  # a read-only or full run directory
            raise storage_error(path or ":memory:", exc) from exc
        self.path = path
        self._closing = False

    def _open(self, path: Path | None) -> sqlite3.Connection:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                _create_like_folder(path)
        target = str(path) if path is not None else ":memory:"
        # One connection guarded by a lock: calls arrive from the event-loop thread and callers.
        db = sqlite3.connect(target, timeout=30.0, check_same_thread=False)
        with self._lock:
            if path is not None:
                db.execute("PRAGMA journal_mode=WAL")
                # A commit reaches the OS at once (a killed process loses nothing) without an
                # fsync per paid call on the event loop; a power cut may lose the last rows,
                # which a resumed run then pays for again.
                db.execute("PRAGMA synchronous=NORMAL")
            db.execute(_SCHEMA)
            columns = {row[1] for row in db.execute("PRAGMA table_info(responses)")}
            missing = sorted(_COLUMNS - columns)
            if missing:
                db.close()
                raise _NotACache(f"its responses table has no {', '.join(missing)} column")
            if "owner" not in columns:  # caches written before the owner column existed
                db.execute("ALTER TABLE responses ADD COLUMN owner TEXT")
            db.commit()
        return db

    def _open_read_only(self, path: Path | None) -> sqlite3.Connection:
        """The file opened for reading only: ``mode=ro`` while a WAL file exists (a writer may
        be at work; its -shm and -wal files are there), else ``immutable=1``, which creates no
        -shm/-wal file (a read-only folder cannot hold them). No file: an empty cache."""
        if path is None or not path.exists():
            db = sqlite3.connect(":memory:", check_same_thread=False)
            db.execute(_SCHEMA)
            return db
        wal = path.with_name(path.name + "-wal").exists()
        uri = path.resolve().as_uri() + ("?mode=ro" if wal else "?mode=ro&immutable=1")
        db = sqlite3.connect(uri, uri=True, timeout=30.0, check_same_thread=False)
        columns = {row[1] for row in db.execute("PRAGMA table_info(responses)")}
        missing = sorted(_COLUMNS - columns)
        if missing:
            db.close()
            raise _NotACache(f"its responses table has no {', '.join(missing)} column")
        if "owner" not in columns:  # a cache written before the owner column: none is owned
            self._select = self._select.replace(", owner FROM", ", NULL FROM")
        return db

    def get(self, key: str) -> CachedResponse | None:
        with self._lock:
            row = self._db.execute(self._select, (key,)).fetchone()
        if row is None:
            return None
        return CachedResponse(row[0], int(row[1] or 0), int(row[2] or 0), row[3], row[4])

    def put(self, key: str, response: CachedResponse) -> None:
        if self.read_only:  # the caller chose to keep the file as it is (see read_only)
            return
        try:
            self._put(key, response)
        except sqlite3.OperationalError as exc:  # disk full, read-only: one clear line
            raise storage_error(self.path or ":memory:", exc) from exc

    def _put(self, key: str, response: CachedResponse) -> None:
        with self._lock:
            self._db.execute(_INSERT, _row(key, response))
            self._db.commit()

    async def aput(self, key: str, response: CachedResponse) -> None:
        """``put`` for the event loop: the row is committed (a killed process keeps it) on return.

        A paid response must be on disk before a checkpoint can count it, so a resumed run
        replays it instead of paying again. The commit runs inline: a background writer thread
        (group commit) was measured to save CPU, but a thread inside SQLite when the process
        forks deadlocks the child, so durability and fork-safety win here.
        """
        if self._closing:
            raise RuntimeError("the response cache is closed")
        self.put(key, response)

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self._closing = True
        with self._lock:
            self._db.close()


# The largest count an INTEGER column holds (sqlite's 64 bits): a provider reporting more
# tokens than that (its own bug) is stored clipped, never an OverflowError mid-run.
MAX_COUNT = 2**63 - 1


def clip_count(value: int, limit: int = MAX_COUNT) -> int:
    """``value`` within ``[0, limit]``: a token count any integer column can hold."""
    return min(max(int(value), 0), limit)


def _row(key: str, response: CachedResponse) -> _Row:
    return (
        key,
        response.text,
        clip_count(response.prompt_tokens),
        clip_count(response.completion_tokens),
        response.cost,
        response.owner,
    )
