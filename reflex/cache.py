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
from typing import Any

__all__ = ["CachedResponse", "ResponseCache", "cache_key"]


@dataclass(frozen=True)
class CachedResponse:
    """What a cache hit returns: the text and the usage the original call reported."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    owner: str | None = None


def cache_key(
    namespace: str, model: str, params: Mapping[str, Any], messages: Sequence[Mapping[str, str]]
) -> str:
    """sha256 over a canonical JSON of everything that determines the response."""
    payload = {"ns": namespace, "model": model, "params": dict(params), "messages": list(messages)}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """sqlite-backed cache; ``path=None`` keeps it in memory (for one process only)."""

    def __init__(self, path: Path | str | None) -> None:
        path = Path(path) if path is not None else None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        target = str(path) if path is not None else ":memory:"
        # One connection guarded by a lock: calls arrive from the event-loop thread and callers.
        self._db = sqlite3.connect(target, timeout=30.0, check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock:
            if path is not None:
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT NOT NULL,"
                " prompt_tokens INTEGER, completion_tokens INTEGER, cost REAL, owner TEXT)"
            )
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(responses)")}
            if "owner" not in columns:  # caches written before the owner column existed
                self._db.execute("ALTER TABLE responses ADD COLUMN owner TEXT")
            self._db.commit()
        self.path = path

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
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
                (
                    key,
                    response.text,
                    response.prompt_tokens,
                    response.completion_tokens,
                    response.cost,
                    response.owner,
                ),
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
