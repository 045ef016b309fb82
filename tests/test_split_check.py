"""A resumed run's splits.json against every record of its split (reflex/run/split_check.py):
run.json's sizes and sha256, the sealed record, and the split each logged evaluation names."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from reflex.checks.audit import SEAL_FILE
from reflex.checks.isolation import EVALUATIONS_FILE
from reflex.run.split_check import SPLITS_FILE, split_problem, split_record

IDS = {"train": ["a", "b", "c"], "val": ["d"], "test": ["e", "f"]}
SWAPPED = {"train": ["e", "f", "c"], "val": ["d"], "test": ["a", "b"]}


def _run(tmp_path: Path, ids: dict[str, list[str]] = IDS) -> Path:
    (tmp_path / SPLITS_FILE).write_text(json.dumps(ids), encoding="utf-8")
    return tmp_path


def test_the_split_as_started_passes_every_check(tmp_path: Path) -> None:
    path = _run(tmp_path)
    log = [{"example_id": "e", "split": "test"}, {"example_id": "d", "split": "val"}]
    (path / EVALUATIONS_FILE).write_text("".join(json.dumps(r) + "\n" for r in log) + "{torn")
    assert split_problem(path, IDS, {"splits": split_record(IDS)}) is None
    assert split_record(IDS)["sizes"] == {"train": 3, "val": 1, "test": 2}


def test_run_json_s_record_names_the_changed_sizes_or_ids(tmp_path: Path) -> None:
    meta = {"splits": split_record(IDS)}
    fewer = {**IDS, "test": ["e"]}
    assert split_problem(_run(tmp_path), fewer, meta) == (
        "test holds 1 ids, 2 at the start (run.json's split record)"
    )
    problem = split_problem(_run(tmp_path), SWAPPED, meta)  # same sizes, other ids
    assert problem is not None and "not those the run started with" in problem


def test_a_sealed_record_catches_an_edited_file(tmp_path: Path) -> None:
    path = _run(tmp_path)
    sealed = hashlib.sha256((path / SPLITS_FILE).read_bytes()).hexdigest()
    (path / SEAL_FILE).write_text(json.dumps({"files": {SPLITS_FILE: {"sha256": sealed}}}))
    assert split_problem(path, IDS, {}) is None
    _run(tmp_path, SWAPPED)
    assert split_problem(path, SWAPPED, {}) == f"changed since the record was sealed ({SEAL_FILE})"


def test_without_a_record_the_evaluation_log_names_the_moved_example(tmp_path: Path) -> None:
    path = _run(tmp_path, SWAPPED)  # a run made before run.json kept its split, never sealed
    (path / EVALUATIONS_FILE).write_text(json.dumps({"example_id": "a", "split": "train"}) + "\n")
    assert split_problem(path, SWAPPED, {}) == (
        f"example 'a' was evaluated as train ({EVALUATIONS_FILE}:1), but the file puts it in test"
    )
