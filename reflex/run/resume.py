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
from reflex.models.usage import ROLES, Role
from reflex.result import RunEnd, best_val_of
from reflex.run.split_check import SPLITS_FILE, split_problem

__all__ = [
    "ResumePoint",
    "RunInfo",
    "earlier_retries",
    "find_resumable",
    "list_runs",
    "load_resume",
    "prompt_hash",
]

# Settings a resume may change: they bound the work, they do not change its results.
MUTABLE_ON_RESUME = {
    "max_workers",
    "client_processes",
    "local_workers",
    "budget",
    "retry_window",
    "max_response_mb",
    "run_id",
    "resumed",
    "dataset_name",
    "prompt_source",  # where the same text was read from (an alias may have moved meanwhile)
    "shared_run_dir",  # only the mode of folders made from now on
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
            "best_val": best_val_of(result)
            if _HAS_BEST & result.keys()
            else max(vals, default=None),
            "final": (result.get("final") or {}).get("mean_score"),
            "p_value": (result.get("significance") or {}).get("p_value"),
            "cost": usage.get("cost"),  # null: every paid call was unpriced
            "calls": usage.get("calls"),
            "cost_unknown": usage.get("cost_unknown"),  # paid calls with no price
            "started": self.meta.get("started"),
        }


_HAS_BEST = {"best_score", "best_score_val"}


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


# The checkpoint's fields a resume reads, and their JSON types (others are the strategy's own).
_CHECKPOINT_TYPES: dict[str, tuple[type, ...]] = {
    "stage": (str,),
    "iteration": (int,),
    "iterations": (list,),
    "state": (dict,),
    "ledger": (dict,),
    "metric_calls": (int,),
    "elapsed_s": (int, float),
}


def checkpoint_problem(checkpoint: object) -> str | None:
    """What is wrong with a parsed checkpoint.json (None: usable)."""
    if not isinstance(checkpoint, dict):
        return f"not a JSON object (got {type(checkpoint).__name__})"
    for key, types in _CHECKPOINT_TYPES.items():
        value = checkpoint.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            return f"{key!r} is {type(value).__name__}, not {types[0].__name__}"
    records = checkpoint.get("iterations") or []
    if not all(isinstance(r, dict) and isinstance(r.get("iteration"), int) for r in records):
        return "'iterations' holds records that are not iteration objects"
    return None


def _read_checkpoint(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The checkpoint and what is wrong with it: (None, None) when there is none."""
    try:
        text = (path / "checkpoint.json").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None, None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None, "not valid JSON"
    problem = checkpoint_problem(data)
    return (None, problem) if problem else (data, None)


def load_run(path: Path) -> RunInfo | None:
    meta = _read(path / "run.json")
    if meta is None:
        return None
    result = _read(path / "result.json")
    checkpoint, _ = _read_checkpoint(path)  # a damaged one is refused by load_resume
    return RunInfo(path.name, path, _status(meta, result), meta, result, checkpoint)


def list_runs(run_dir: str | Path) -> list[RunInfo]:
    """Every run under ``run_dir``, oldest first."""
    root = Path(run_dir) / "runs"
    if not root.is_dir():
        return []
    runs = (load_run(p) for p in sorted(root.iterdir()) if p.is_dir())
    return sorted((r for r in runs if r is not None), key=lambda r: str(r.meta.get("started")))


def find_resumable(
    run_dir: str | Path, dataset: Dataset, prompt: str, config: RunConfig | None = None
) -> str:
    """The latest unfinished run this command can continue; ConfigurationError when none.

    A run matches when its dataset, starting prompt and (given ``config``) settings are this
    command's: a run made with other settings (one that failed at its first call with a
    misspelt model, say) is never picked. With no match the error names the closest run and
    what differs, or the matching run that is still going, with its pid.
    """
    fingerprint, wanted = dataset.fingerprint(), prompt_hash(prompt)
    current = config.model_dump(mode="json") if config is not None else None
    closest: tuple[int, RunInfo, list[str]] | None = None
    for run in reversed(list_runs(run_dir)):
        if run.status not in ("interrupted", "failed", "paused", "running"):
            continue
        problems = _mismatches(run, fingerprint, wanted, current)
        if not problems and run.status == "running":
            raise ConfigurationError(
                f"run {run.run_id} is still running (pid {run.meta.get('pid')}): wait for it "
                "to end, or stop it and then use --resume"
            )
        if not problems:
            return run.run_id
        if run.status != "running" and (closest is None or len(problems) < closest[0]):
            closest = (len(problems), run, problems)
    if closest is not None:
        _, run, problems = closest
        raise ConfigurationError(
            f"no unfinished run in {run_dir} matches this command; the closest, {run.run_id}, "
            f"differs in {'; '.join(problems)} (run without --resume, or use the original "
            "settings)"
        )
    raise ConfigurationError(
        f"no unfinished run for this dataset and prompt in {run_dir}: run without --resume, "
        "or name one with --resume-from ID (see `aevyra-reflex runs`)"
    )


def _mismatches(
    run: RunInfo, fingerprint: str, prompt_sha: str, current: Mapping[str, object] | None
) -> list[str]:
    """What keeps ``run`` from being continued with this dataset, prompt and settings."""
    problems = []
    if current is not None:
        saved = _read(run.path / "config.json")
        if saved is None:
            problems.append("config.json: missing or unreadable")
        else:
            problems.extend(_differences(saved, current))
    if run.meta.get("dataset_fingerprint") != fingerprint:
        problems.append("dataset: the file's rows changed since the run started")
    if run.meta.get("prompt_sha256") != prompt_sha:
        problems.append("prompt: the starting prompt changed since the run started")
    return problems


def earlier_retries(path: Path) -> dict[Role, int]:
    """The retries recorded in a run's events.jsonl, by role (a resumed run's ledger starts from
    the cache, which holds answers, not the retries it took to get them)."""
    counts: dict[Role, int] = {}
    try:
        lines = (path / "events.jsonl").read_bytes().splitlines()
    except FileNotFoundError:
        return counts
    for line in lines:
        if b'"retry"' not in line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "retry":
            role = event.get("role")
            key: Role = role if role in ROLES else "task"  # events written before roles
            counts[key] = counts.get(key, 0) + 1
    return counts


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
    problems = _mismatches(
        run, dataset.fingerprint(), prompt_hash(prompt), config.model_dump(mode="json")
    )
    if problems:
        raise ConfigurationError(
            f"cannot resume run {run_id}: "
            + "; ".join(problems)
            + " (use the original settings, or start a new run)"
        )
    checkpoint, problem = _read_checkpoint(path)
    if problem is not None:
        raise ConfigurationError(
            f"cannot resume run {run_id}: its checkpoint.json is damaged ({problem}); start a "
            "new run (answers already paid for are in the cache and are not paid again)"
        )
    splits = _read(path / SPLITS_FILE) or {}
    ids = {k: list(v) for k, v in splits.items() if isinstance(v, list)}
    problem = split_problem(path, ids, run.meta)
    if problem is not None:
        raise ConfigurationError(
            f"cannot resume run {run_id}: {path / SPLITS_FILE} does not match the run's record: "
            f"{problem}; restore the file as the run wrote it, or start a new run"
        )
    return ResumePoint(run_id, {k: list(v) for k, v in splits.items()}, checkpoint)
