"""Finding a run record from what a user typed: a run id (or prefix), a run folder, result.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reflex.config import default
from reflex.errors import ConfigurationError

__all__ = ["RUN_DIR", "read_json", "resolve_run"]


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; ConfigurationError naming the file when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigurationError(f"{path}: no such file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


RUN_DIR: str = default("run_dir")  # RunConfig's, for callers that name none


def resolve_run(ref: str, run_dir: str | Path = RUN_DIR) -> Path:
    """The run folder ``ref`` names: a path to a run folder or its result.json, or a run id
    (a unique prefix is enough) under ``<run_dir>/runs``."""
    path = Path(ref)
    if path.is_file() and path.name == "result.json":
        return path.parent
    if path.is_dir() and ((path / "run.json").is_file() or (path / "result.json").is_file()):
        return path
    root = Path(run_dir) / "runs"
    candidates = sorted(p for p in root.glob(f"{ref}*") if p.is_dir()) if root.is_dir() else []
    exact = [p for p in candidates if p.name == ref]
    if exact or len(candidates) == 1:
        return (exact or candidates)[0]
    known = ", ".join(p.name for p in sorted(root.iterdir())[-5:]) if root.is_dir() else "none"
    what = "several runs" if candidates else "no run"
    raise ConfigurationError(
        f"{what} matching {ref!r} (a run id in {run_dir}, a run folder or a result.json; "
        f"latest: {known or 'none'})"
    )
