"""bench/quality_tasks.py: the tasks bench/quality.py runs and their seeded, stratified splits."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import quality_tasks


def test_splits_are_stratified_disjoint_and_seeded() -> None:
    task = quality_tasks.TASKS["intents7"]
    rows = quality_tasks.stratified(task.rows(), task.sizes, seed=0)
    by_split: dict[str, list[dict[str, str]]] = {"train": [], "val": [], "test": []}
    for row in rows:
        by_split[row["split"]].append(row)
    assert [len(by_split[k]) for k in ("train", "val", "test")] == [40, 40, 100]
    assert len({r["id"] for r in rows}) == 180
    for part in by_split.values():  # every one of the 7 labels in every split
        assert len({r["ideal"] for r in part}) == 7
    assert rows == quality_tasks.stratified(task.rows(), task.sizes, seed=0)
    assert rows != quality_tasks.stratified(task.rows(), task.sizes, seed=1)
