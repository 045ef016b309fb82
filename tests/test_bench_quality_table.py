"""bench/quality_table.py: the cells and tables of bench/quality.py, and merging earlier runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import quality_table


def test_merge_takes_the_first_file_per_seed_and_skips_named_methods(tmp_path: Path) -> None:
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
    cells = quality_table.merge([str(new), f"{old}:nocalls:skip=fewshot"])
    assert {key[1]: (c.scores, c.calls) for key, c in cells.items()} == {
        "auto": ([0.9], [100]),
        "instructions": ([0.7], []),
    }
    renamed = quality_table.merge([f"{old}:skip=auto:rename=fewshot/fewshot (bootstrap)"])
    assert sorted(key[1] for key in renamed) == ["fewshot (bootstrap)", "instructions"]


def test_a_preset_row_is_a_search_compared_with_the_references_not_one_of_them() -> None:
    rows = {f"0:r{i}": float(i < 6) for i in range(10)}  # the hand-written prompt: 6 of 10
    hand = quality_table.Cell("t", "hand-written", None, [0.6], [], [0], rows)
    preset = quality_table.Cell(
        "t", "auto budget=light", None, [0.9], [420], [0], {k: float(k != "0:r9") for k in rows}
    )
    fixed = quality_table.Cell("t", "auto", 450, [0.8], [440], [0], dict(rows, **{"0:r6": 1.0}))
    lines = quality_table.table([preset, fixed, hand], ["t"]).splitlines()[2:]
    table = {line.split(" | ")[1]: line.split(" | ") for line in lines}
    assert list(table) == ["hand-written", "auto", "auto budget=light"]  # the preset last
    assert table["hand-written"][7] == "-"  # the best reference is the hand-written row
    assert table["auto budget=light"][7].startswith("+0.300 p=")
    assert table["auto"][7].startswith("+0.100 p=")


def test_versus_pairs_each_row_with_that_method_at_its_budget() -> None:
    rows = {f"0:r{i}": float(i < 5) for i in range(10)}

    def cell(method: str, budget: int, right: int) -> quality_table.Cell:
        per_row = {k: float(int(k[3:]) < right) for k in rows}
        return quality_table.Cell("t", method, budget, [right / 10], [budget], [0], per_row)

    cells = [cell("old", 150, 5), cell("new", 150, 8), cell("old", 450, 6), cell("new", 450, 6)]
    lines = quality_table.table(cells, ["t"], versus="old").splitlines()
    assert lines[0].endswith("| vs old (same budget) |") and lines[1].count("|") == 11
    table = {tuple(line.split(" | ")[1:3]): line.split(" | ")[-1] for line in lines[2:]}
    assert table[("new", "150")].startswith("+0.300 p=")  # against old at 150, not at 450
    assert table[("new", "450")].startswith("+0.000 p=")
    assert table[("old", "150")] == "- |"  # the row itself
