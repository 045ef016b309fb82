"""The run directory: ``<run_dir>/runs/<id>/`` with config, splits, events, checkpoint, result.

Layout::

    <run_dir>/cache.sqlite          response cache shared by the runs in this directory
    <run_dir>/runs/<id>/config.json run configuration (no secrets)
                        splits.json the example ids of train / val / test
                        events.jsonl append-only log of evaluations, iterations, retries, failures
                        evaluations.jsonl one row per evaluated (example, model): the per-row log
                        reflections.jsonl one row per reasoning call: request, answer, outcome
                        checkpoint.json latest engine state, replaced atomically
                        prompts/     every prompt that was recorded, by iteration
                        result.json  the final OptimizationResult (schema_version'd)

Folders it creates are private (0700; files in them 0600), or group-readable for a team's
shared folder (``shared``: 0750, files 0640); a folder that exists already keeps its mode.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from reflex.data.files import PRIVATE_DIR, SHARED_DIR, atomic_write_text, create_file, make_dirs
from reflex.errors import storage_error

__all__ = ["RunStore"]

_LOGS = ("events.jsonl", "evaluations.jsonl", "reflections.jsonl")  # appended to, never replaced


class RunStore:
    """Creates one run's directory and writes its files."""

    def __init__(
        self, run_dir: str | Path, run_id: str | None = None, *, shared: bool = False
    ) -> None:
        self.root = Path(run_dir)
        self.run_id = run_id or _new_run_id()
        self.path = self.root / "runs" / self.run_id
        try:
            if run_id is None and self.path.exists():
                raise FileExistsError(self.path)
            make_dirs(self.path, SHARED_DIR if shared else PRIVATE_DIR)
        except FileExistsError:
            raise
        except OSError as exc:
            raise storage_error(self.path, exc) from exc
        self._lock = threading.Lock()
        if run_id is not None:
            for name in _LOGS:
                self._repair(name)

    @staticmethod
    def make_root(run_dir: str | Path, *, shared: bool = False) -> None:
        """Create the run directory itself (where the sqlite cache lives) with the run
        folders' mode, before anything is put in it; an existing one keeps its mode."""
        try:
            make_dirs(Path(run_dir), SHARED_DIR if shared else PRIVATE_DIR)
        except OSError as exc:
            raise storage_error(Path(run_dir), exc) from exc

    def _repair(self, name: str) -> None:
        """Drop a torn last line of a JSON-lines log (a process killed mid-write), so the rows a
        resumed run appends start on a line of their own; the repair is an event itself."""
        target = self.path / name
        try:
            with open(target, "rb+") as handle:
                data = handle.read()
                if not data or data.endswith(b"\n"):
                    return
                keep = data.rfind(b"\n") + 1
                handle.truncate(keep)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise storage_error(target, exc) from exc
        where = {} if name == "events.jsonl" else {"file": name}
        self.event("events_repaired", dropped_bytes=len(data) - keep, **where)

    @property
    def cache_path(self) -> Path:
        return self.root / "cache.sqlite"

    def write_json(self, name: str, data: object) -> Path:
        target = self.path / name
        atomic_write_text(target, json.dumps(data, indent=2, ensure_ascii=False, default=str))
        return target

    def write_prompt(self, label: str, prompt: str) -> None:
        atomic_write_text(self.path / "prompts" / f"{label}.txt", prompt)

    def event(self, kind: str, **data: object) -> None:
        self.append("events.jsonl", [{"ts": time.time(), "type": kind, **data}])

    def append(self, name: str, rows: Sequence[Mapping[str, object]]) -> None:
        """Append ``rows`` to the JSON-lines file ``name`` (events, evaluations, reflections)."""
        lines = "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows)
        target = self.path / name
        try:
            with self._lock, open(create_file(target), "a", encoding="utf-8") as handle:
                handle.write(lines)
        except OSError as exc:
            raise storage_error(target, exc) from exc


def _new_run_id() -> str:
    # Timestamp for sorting, random suffix so two processes starting together never collide.
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
