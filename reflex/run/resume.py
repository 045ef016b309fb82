"""Finding runs in a run directory, their status, and what a resume needs.

A resumed run re-executes its strategy from the start against the response cache: every call
the interrupted process paid for is answered from the cache (counted once, as before), so the
strategy's state, history and totals are re-derived exactly, for any strategy, and only the
interrupted iteration's unfinished calls are paid again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reflex.config import RunConfig
from reflex.data.dataset import Dataset
from reflex.data.json_types import JSONDict
from reflex.errors import ConfigurationError
from reflex.result import RunEnd

__all__ = ["ResumePoint", "RunInfo", "find_resumable", "list_runs", "load_resume", "prompt_hash"]

# Settings a resume may change: they bound the work, they do not change its results.
MUTABLE_ON_RESUME = {
    "max_workers",
    "client_processes",
    "budget",
    "run_id",
    "resumed",
    "dataset_name",
}


def prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ResumePoint:
    """What the engine needs to continue a run: its id, split and latest checkpoint."""

    run_id: str
    split_ids: dict[str, list[str]]
    checkpoint: dict[str, Any] | None


@dataclass(frozen=True)
class RunInfo:
    """One run directory, summarised for ``aevyra-reflex runs``."""

    run_id: str
    path: Path
    status: str
    meta: dict[str, Any]
    result: dict[str, Any] | None
    checkpoint: dict[str, Any] | None

    def summary(self) -> JSONDict:
        result = self.result or {}
        iterations = result.get("iterations") or (self.checkpoint or {}).get("iterations") or []
        usage = (result.get("usage") or (self.checkpoint or {}).get("ledger") or {}).get(
            "total", {}
        )
        vals = [r.get("val_score") for r in iterations if r.get("val_score") is not None]
        return {
            "id": self.run_id,
            "status": self.status,
            "strategy": self.meta.get("strategy"),
            "dataset": self.meta.get("dataset_name"),
            "iterations": len(iterations),
            "baseline": (result.get("baseline") or {}).get("mean_score"),
            "best_val": result.get("best_score", max(vals) if vals else None),
            "final": (result.get("final") or {}).get("mean_score"),
            "cost": usage.get("cost"),
            "started": self.meta.get("started"),
        }


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    if pid == os.getpid():
        # Engine.run is synchronous: a run of this process without a result has ended (e.g. the
        # disk filled up before result.json was written); it is resumable, not running.
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _status(meta: Mapping[str, object], result: Mapping[str, object] | None) -> str:
    if result is None:  # no result yet: still running, or killed before it could write one
        return "running" if _alive(meta.get("pid")) else "interrupted"
    end = RunEnd.of_record(result)
    if end is RunEnd.SUCCEEDED:
        return "completed"
    if end is RunEnd.PAUSED_BUDGET:  # finished with its final; resumable with a larger budget
        return "paused"
    if end is RunEnd.NO_CANDIDATE:  # finished: resuming would fail the same way
        return "no_candidate"
    # A budget that ran out outside the loop counts as failed: resumable, like an interruption.
    return "interrupted" if end is RunEnd.INTERRUPTED else "failed"


def load_run(path: Path) -> RunInfo | None:
    meta = _read(path / "run.json")
    if meta is None:
        return None
    result = _read(path / "result.json")
    return RunInfo(
        path.name, path, _status(meta, result), meta, result, _read(path / "checkpoint.json")
    )


def list_runs(run_dir: str | Path) -> list[RunInfo]:
    """Every run under ``run_dir``, oldest first."""
    root = Path(run_dir) / "runs"
    if not root.is_dir():
        return []
    runs = (load_run(p) for p in sorted(root.iterdir()) if p.is_dir())
    return sorted((r for r in runs if r is not None), key=lambda r: str(r.meta.get("started")))


def find_resumable(run_dir: str | Path, dataset: Dataset, prompt: str) -> str:
    """The latest unfinished run for this dataset and prompt; ConfigurationError when none."""
    fingerprint, wanted = dataset.fingerprint(), prompt_hash(prompt)
    for run in reversed(list_runs(run_dir)):
        if (
            run.status in ("interrupted", "failed", "paused")
            and run.meta.get("dataset_fingerprint") == (fingerprint)
            and run.meta.get("prompt_sha256") == wanted
        ):
            return run.run_id
    raise ConfigurationError(
        f"no unfinished run for this dataset and prompt in {run_dir}: run without --resume, "
        "or name one with --resume-from ID (see `aevyra-reflex runs`)"
    )


def _differences(saved: Mapping[str, object], current: Mapping[str, object]) -> list[str]:
    # A setting the saved config lacks was added after the run started (an older version wrote
    # it, e.g. metric_specs): there is nothing to compare it with, so it cannot block a resume.
    keys = sorted((set(saved) | set(current)) - MUTABLE_ON_RESUME)
    return [
        _difference(k, saved.get(k), current.get(k))
        for k in keys
        if saved.get(k) != current.get(k) and (k in saved or k not in RunConfig.model_fields)
    ]


def _difference(key: str, old: object, new: object) -> str:
    if key == "metric_specs":  # name the metrics whose options changed, not a rubric dump
        before = old if isinstance(old, list) else []
        after = new if isinstance(new, list) else []
        changed = sorted(
            {str(s.get("name")) for s in before + after if (s in before) != (s in after)}
        )
        return f"metric_specs: the options of {', '.join(changed) or 'the metrics'} changed"
    return f"{key}: {old!r} -> {new!r}"


def load_resume(config: RunConfig, dataset: Dataset, prompt: str, run_id: str) -> ResumePoint:
    """Check that run ``run_id`` can be continued with this config, dataset and prompt."""
    path = Path(config.run_dir) / "runs" / run_id
    run = load_run(path)
    if run is None:
        raise ConfigurationError(
            f"no run {run_id!r} in {config.run_dir} (see `aevyra-reflex runs`)"
        )
    if run.status in ("completed", "no_candidate"):
        what = "completed" if run.status == "completed" else "ended with no usable candidate"
        raise ConfigurationError(f"run {run_id} already {what}; nothing to resume")
    if run.status == "running":
        raise ConfigurationError(f"run {run_id} is still running (pid {run.meta.get('pid')})")
    problems = _differences(_read(path / "config.json") or {}, config.model_dump(mode="json"))
    if run.meta.get("dataset_fingerprint") != dataset.fingerprint():
        problems.append("dataset: the file's rows changed since the run started")
    if run.meta.get("prompt_sha256") != prompt_hash(prompt):
        problems.append("prompt: the starting prompt changed since the run started")
    if problems:
        raise ConfigurationError(
            f"cannot resume run {run_id}: "
            + "; ".join(problems)
            + " (use the original settings, or start a new run)"
        )
    splits = _read(path / "splits.json") or {}
    return ResumePoint(run_id, {k: list(v) for k, v in splits.items()}, run.checkpoint)
