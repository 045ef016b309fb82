"""bench/quality.py runs end to end (on the fake model: a smoke test of the script, not figures)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_quality", BENCH / "quality.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_quality"] = module
    spec.loader.exec_module(module)
    return module


def test_splits_are_stratified_disjoint_and_seeded() -> None:
    quality = _load()
    task = quality.TASKS["intents7"]
    rows = quality.stratified(task.rows(), task.sizes, seed=0)
    by_split: dict[str, list[dict[str, str]]] = {"train": [], "val": [], "test": []}
    for row in rows:
        by_split[row["split"]].append(row)
    assert [len(by_split[k]) for k in ("train", "val", "test")] == [40, 40, 100]
    assert len({r["id"] for r in rows}) == 180
    for part in by_split.values():  # every one of the 7 labels in every split
        assert len({r["ideal"] for r in part}) == 7
    assert rows == quality.stratified(task.rows(), task.sizes, seed=0)
    assert rows != quality.stratified(task.rows(), task.sizes, seed=1)


def test_the_bench_runs_and_prints_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    quality = _load()
    quality.main(
        [
            "--fake",
            "--seeds",
            "0",
            "--budgets",
            "150",
            "--tasks",
            "intents7",
            "--strategies",
            "auto",
        ]
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| task | method | search budget | test mean")
    methods = [line.split(" | ")[1] for line in lines[2:]]
    assert methods == ["bare prompt", "hand-written", "auto"]
    search = int(lines[-1].split(" | ")[6])
    assert 0 < search <= 150  # the search stayed within its budget


def test_merge_takes_the_first_file_per_seed_and_skips_named_methods(tmp_path: Path) -> None:
    quality = _load()

    def cell(method: str, score: float, calls: int) -> dict[str, object]:
        return {
            "task": "t",
            "method": method,
            "budget": 450,
            "scores": [score],
            "calls": [calls],
            "seeds": [0],
            "per_row": {"0:a": score},
        }

    new, old = tmp_path / "new.json", tmp_path / "old.json"
    new.write_text(json.dumps([cell("auto", 0.9, 100)]), encoding="utf-8")
    old.write_text(
        json.dumps(
            [cell("auto", 0.5, 90), cell("fewshot", 0.0, 80), cell("instructions", 0.7, 70)]
        ),
        encoding="utf-8",
    )
    cells = quality.merge([str(new), f"{old}:nocalls:skip=fewshot"])
    assert {key[1]: (c.scores, c.calls) for key, c in cells.items()} == {
        "auto": ([0.9], [100]),
        "instructions": ([0.7], []),
    }
    renamed = quality.merge([f"{old}:skip=auto:rename=fewshot/fewshot (bootstrap)"])
    assert sorted(key[1] for key in renamed) == ["fewshot (bootstrap)", "instructions"]


def test_the_tool_call_and_extraction_tasks_report_their_objective_beside_partial_credit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    quality = _load()
    out = tmp_path / "cells.json"
    argv = [
        "--fake",
        "--seeds",
        "0",
        "--budgets",
        "150",
        "--tasks",
        "bfcl,extraction",
        "--no-hand-written",
    ]
    quality.main([*argv, "--strategies", "auto", "--json", str(out)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| task | method | search budget | test figure | sd | partial")
    rows = [line.split(" | ") for line in lines[2:]]
    assert [(r[0], r[1]) for r in rows] == [
        ("| bfcl", "bare prompt"),
        ("| bfcl", "auto"),
        ("| extraction", "bare prompt"),
        ("| extraction", "auto"),
    ]
    cells = {(c["task"], c["method"]): c for c in json.loads(out.read_text(encoding="utf-8"))}
    bfcl = cells[("bfcl", "bare prompt")]
    # The fake calls the right function with no argument: partial credit, never `exact`.
    assert bfcl["scores"] == [0.0] and 0.0 < bfcl["partials"][0] < 1.0
    assert len(bfcl["per_row"]) == len(bfcl["partial"]) == quality.TASKS["bfcl"].sizes[2]
    # The bare row is the auto run's baseline: the same test rows, no search call of its own.
    assert bfcl["calls"] == [] and set(bfcl["per_row"]) == set(cells[("bfcl", "auto")]["per_row"])
    merged = quality.merge([str(out)])
    assert merged[("bfcl", "bare prompt", None)].partials == bfcl["partials"]
