"""The run directory: ``<run_dir>/runs/<id>/`` with config, splits, events, checkpoint, result.

Layout::

    <run_dir>/cache.sqlite          response cache shared by the runs in this directory
    <run_dir>/runs/<id>/config.json run configuration (no secrets)
                        splits.json the example ids of train / val / test
                        events.jsonl append-only log of evaluations, iterations, retries, failures
                        checkpoint.json latest engine state, replaced atomically
                        prompts/     every prompt that was recorded, by iteration
                        result.json  the final OptimizationResult (schema_version'd)
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["RunStore", "atomic_write_text"]


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so readers see either the old or the new file, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


class RunStore:
    """Creates one run's directory and writes its files."""

    def __init__(self, run_dir: str | Path, run_id: str | None = None) -> None:
        self.root = Path(run_dir)
        self.run_id = run_id or _new_run_id()
        self.path = self.root / "runs" / self.run_id
        self.path.mkdir(parents=True, exist_ok=run_id is not None)
        self._lock = threading.Lock()

    @property
    def cache_path(self) -> Path:
        return self.root / "cache.sqlite"

    def write_json(self, name: str, data: Any) -> Path:
        target = self.path / name
        atomic_write_text(target, json.dumps(data, indent=2, ensure_ascii=False, default=str))
        return target

    def write_prompt(self, label: str, prompt: str) -> None:
        atomic_write_text(self.path / "prompts" / f"{label}.txt", prompt)

    def event(self, kind: str, **data: Any) -> None:
        line = json.dumps(
            {"ts": time.time(), "type": kind, **data}, ensure_ascii=False, default=str
        )
        with self._lock, open(self.path / "events.jsonl", "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def _new_run_id() -> str:
    # Timestamp for sorting, random suffix so two processes starting together never collide.
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
