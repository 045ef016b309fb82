"""Terminal output tells the truth legibly: plain logs, percentages, paths, p-values."""

from __future__ import annotations

import io
import json
from pathlib import Path

from click.testing import CliRunner
from conftest import make_rows
from rich.console import Console

from reflex import OptimizationResult, PromptOptimizer
from reflex.cli import build_cli
from reflex.cli.console import ConsoleReporter, improvement_text, print_summary, selection_text
from reflex.testing import FakeModel


def _run(run_dir: Path, *callbacks: object) -> OptimizationResult:
    return (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(run_dir)
        .configure(max_iterations=2)
        .run("Classify the sentiment.", callbacks=list(callbacks))
    )


def test_no_percentage_over_a_tiny_baseline() -> None:
    # Issue 17: "+3100.0%" was printed for 0.01 -> 0.32.
    assert improvement_text(0.31, 0.01, 3100.0) == "+0.310 (no % shown over a baseline of 0.010)"
    assert improvement_text(0.2, 0.5, 40.0) == "+0.200 (+40.0%)"
    assert improvement_text(0.2, 0.0, None) == "+0.200"


def test_a_redirected_log_shows_progress_lines(fake_model: FakeModel, tmp_path: Path) -> None:
    # Issue 17: with stderr redirected nothing was printed for minutes before "baseline test".
    out = io.StringIO()
    reporter = ConsoleReporter(Console(file=out, force_terminal=False, width=100))
    _run(tmp_path, reporter)
    lines = out.getvalue().splitlines()
    [start] = [i for i, x in enumerate(lines) if x.startswith("test:baseline: ")][:1]
    total = int(lines[start].split()[1])
    assert lines[start] == f"test:baseline: {total} evaluations"
    end = lines.index(next(x for x in lines if x.startswith("test:baseline: done, mean ")))
    steps = lines[start + 1 : end]
    assert steps and all(x.startswith("test:baseline: ") and x.endswith(f"/{total}") for x in steps)
    assert lines[end + 1].startswith("baseline  test ")


def test_the_summary_never_truncates_the_run_directory(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    deep = tmp_path / ("a-rather-long-folder-name-" * 4) / "runs"
    result = _run(deep)
    out = io.StringIO()
    print_summary(result, Console(file=out, width=60, force_terminal=False))
    # The table folds the path over several lines; joined up, every character is there.
    joined = "".join(
        line.split("│")[2].strip() for line in out.getvalue().splitlines() if line.count("│") == 3
    )
    assert str(result.run_dir) in joined


def test_show_prints_the_paired_test(fake_model: FakeModel, tmp_path: Path) -> None:
    result = _run(tmp_path / "rd")
    run = Path(str(result.run_dir))
    sig = json.loads((run / "result.json").read_text(encoding="utf-8"))["significance"]
    args = ["show", run.name, "--run-dir", str(tmp_path / "rd")]
    res = CliRunner().invoke(build_cli(), args)
    assert res.exit_code == 0, res.output
    [line] = [x for x in res.output.splitlines() if x.startswith("paired test ")]
    assert f"p={sig['p_value']:.4f}" in line or "p<0.0001" in line
    res = CliRunner().invoke(build_cli(), [*args, "--json"])
    assert json.loads(res.output)["summary"]["p_value"] == sig["p_value"]


def test_the_correction_line_says_how_many_were_seen_on_part_of_the_rows() -> None:
    selection = {"iteration": 3, "diff": 0.2, "p": 0.04, "k": 9, "bound": 0.15, "kept": True}
    assert "among 9 candidates, chance" in selection_text(selection)
    line = selection_text({**selection, "seen": 6})
    assert "among 9 candidates (6 seen on part of the val rows), chance bound +0.150" in line
