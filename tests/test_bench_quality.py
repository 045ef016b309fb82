"""bench/quality.py runs end to end (on the fake model: a smoke test of the script, not figures).

Its tasks and splits: test_bench_quality_tasks.py; its tables and merge:
test_bench_quality_table.py.
"""

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


def test_a_preset_budget_is_a_row_of_its_own_sized_by_the_product(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from reflex.run.presets import PRESET_CANDIDATES, candidate_calls, fixed_calls

    quality = _load()
    argv = ["--fake", "--seeds", "0", "--tasks", "intents7", "--no-references"]
    quality.main([*argv, "--budgets", "light", "--strategies", "auto"])
    lines = capsys.readouterr().out.splitlines()
    (row,) = [line.split(" | ") for line in lines[2:]]
    assert (row[1], row[2]) == ("auto budget=light", "-")
    # light: 4 candidates in each of auto's 2 phases, each screened on 8 train rows then on
    # every val row; the search calls are the run's calls but the two test evaluations.
    train, val, test = quality.TASKS["intents7"].sizes
    fixed = fixed_calls(1, train=train, val=val, test=test) - 2 * test
    most = fixed + PRESET_CANDIDATES["light"] * 2 * candidate_calls(1, val=val, batch_size=8)
    assert val < int(row[6]) <= most


def test_a_pinned_split_gives_every_seed_the_same_test_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quality = _load()
    argv = ["--fake", "--seeds", "0,1", "--tasks", "intents7", "--no-references"]
    argv += ["--budgets", "150", "--strategies", "auto"]
    free, pinned = tmp_path / "free.json", tmp_path / "pinned.json"
    quality.main([*argv, "--json", str(free)])
    quality.main([*argv, "--split-seed", "0", "--json", str(pinned)])
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if "| auto" in line]
    assert [row[1] for row in rows] == ["auto", "auto split=0"]

    def test_ids(path: Path, seed: int) -> set[str]:
        (cell,) = [c for c in json.loads(path.read_text(encoding="utf-8")) if c["per_row"]]
        return {key.split(":", 1)[1] for key in cell["per_row"] if key.startswith(f"{seed}:")}

    assert test_ids(free, 0) != test_ids(free, 1)  # a split per seed
    assert test_ids(pinned, 0) == test_ids(pinned, 1) == test_ids(free, 0)


def test_a_readme_section_is_written_between_its_own_markers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    quality = _load()
    cells = tmp_path / "cells.json"
    quality.main(
        [
            "--fake",
            "--seeds",
            "0",
            "--tasks",
            "intents7",
            "--no-references",
            "--budgets",
            "150",
            "--strategies",
            "auto",
            "--json",
            str(cells),
        ]
    )
    (tmp_path / "bench").mkdir()
    readme = tmp_path / "bench" / "README.md"
    readme.write_text("# B\n\n<!-- quality:begin -->\nmain table\n<!-- quality:end -->\n")
    monkeypatch.setattr(sys.modules["quality_table"], "ROOT", tmp_path)
    for _ in range(2):  # the second time replaces the first
        quality.main(["--merge", str(cells), "--readme", "--readme-section", "search2"])
    text = readme.read_text()
    assert "<!-- quality:begin -->\nmain table\n<!-- quality:end -->" in text
    assert text.count("<!-- quality-search2:begin -->") == 1
    section = text.split("<!-- quality-search2:begin -->")[1].split("<!-- quality-search2:end")[0]
    assert "| intents7 | auto | 150 |" in section and "--readme-section search2" in section
