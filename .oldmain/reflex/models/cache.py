"""A durable response cache (sqlite) keyed by model, decoding parameters and the full messages.

Only successful responses are stored, so a transient failure is never replayed. The cache is
shared by every run under one run directory, so re-running the same evaluation pays nothing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reflex.errors import storage_error

__all__ = ["CachedResponse", "ResponseCache", "cache_key"]

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
    namespace: str, model: str, params: Mapping[str, object], messages: Sequence[Mapping[str, str]]
) -> str:
    """sha256 over a canonical JSON of everything that determines the response."""
    payload = {"ns": namespace, "model": model, "params": dict(params), "messages": list(messages)}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """sqlite-backed cache; ``path=None`` keeps it in memory (for one process only)."""

    def __init__(self, path: Path | str | None) -> None:
        path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        try:
            self._db = self._open(path)
        except (OSError, sqlite3.Error) as exc:  # a read-only or full run directory
            raise storage_error(path or ":memory:", exc) from exc
        self.path = path
        self._closing = False

    def _open(self, path: Path | None) -> sqlite3.Connection:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
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
            db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT NOT NULL,"
                " prompt_tokens INTEGER, completion_tokens INTEGER, cost REAL, owner TEXT)"
            )
            columns = {row[1] for row in db.execute("PRAGMA table_info(responses)")}
            if "owner" not in columns:  # caches written before the owner column existed
                db.execute("ALTER TABLE responses ADD COLUMN owner TEXT")
            db.commit()
        return db

    def get(self, key: str) -> CachedResponse | None:
        with self._lock:
            row = self._db.execute(
                "SELECT text, prompt_tokens, completion_tokens, cost, owner FROM responses"
                " WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        return CachedResponse(row[0], int(row[1] or 0), int(row[2] or 0), row[3], row[4])

    def put(self, key: str, response: CachedResponse) -> None:
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


def _row(key: str, response: CachedResponse) -> _Row:
    return (
        key,
        response.text,
        response.prompt_tokens,
        response.completion_tokens,
        response.cost,
        response.owner,
    )
