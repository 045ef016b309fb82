"""``aevyra-reflex runs`` and ``show RUN`` (reflex/cli/runs.py): what is in a run directory, as a
table or JSON, one run found by an id prefix, its iterations and the prompt diff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import make_rows

from reflex import OptimizationResult, PromptOptimizer
from reflex.cli import build_cli
from reflex.testing import FakeModel

START = "Classify the sentiment."


@pytest.fixture
def finished(fake_model: FakeModel, tmp_path: Path) -> OptimizationResult:
    return (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path / "rd")
        .configure(max_iterations=2)
        .run(START)
    )


def _cli(*args: str) -> str:
    done = CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return done.output


def test_runs_lists_the_run_directory(finished: OptimizationResult, tmp_path: Path) -> None:
    run_dir = str(tmp_path / "rd")
    [row] = json.loads(_cli("runs", "--run-dir", run_dir, "--json"))
    assert Path(str(finished.run_dir)).name == row["id"]
    assert (row["status"], row["iterations"]) == ("completed", 2)
    table = _cli("runs", "--run-dir", run_dir).splitlines()
    assert table[0].split()[:3] == ["id", "status", "strategy"] and row["id"] in table[1]
    assert _cli("runs", "--run-dir", str(tmp_path / "empty")).strip().startswith("no runs in")


def test_show_finds_a_run_by_prefix_and_prints_its_iterations_and_diff(
    finished: OptimizationResult, tmp_path: Path
) -> None:
    run_id = Path(str(finished.run_dir)).name
    shown = json.loads(_cli("show", run_id[:12], "--run-dir", str(tmp_path / "rd"), "--json"))
    assert shown["summary"]["id"] == run_id and len(shown["iterations"]) == 2
    assert shown["initial_prompt"] == START and shown["best_prompt"] == finished.best_prompt
    text = _cli("show", run_id, "--run-dir", str(tmp_path / "rd"))
    assert "iter  train   val" in text
    assert ("(unchanged)" in text) == (finished.best_prompt == START)


def test_an_unknown_run_is_one_line_naming_the_latest(
    finished: OptimizationResult, tmp_path: Path
) -> None:
    done = CliRunner().invoke(build_cli(), ["show", "nope", "--run-dir", str(tmp_path / "rd")])
    assert done.exit_code == 2
    assert "no run matching 'nope'" in done.output
    assert Path(str(finished.run_dir)).name in done.output
