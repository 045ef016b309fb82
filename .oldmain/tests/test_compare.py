"""compare: strategy x seed at one metric-call budget, summary stats, JSON + table, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_rows

from reflex import PromptOptimizer
from reflex.run.compare import RunSummary, summarize
from reflex.testing import FakeModel

START = "Classify the sentiment."


def builder(run_dir: Path) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows(30))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(run_dir)
        .configure(max_iterations=3, max_workers=4)
    )


def _run(strategy: str, seed: int, final: float, scores: dict[str, float]) -> RunSummary:
    return RunSummary(strategy, seed, 0.2, final, 50, 900, 0.01, "done", None, scores)


def test_summary_statistics_and_paired_p() -> None:
    runs = [
        _run("a", 0, 1.0, {f"0:r{i}": 1.0 for i in range(8)}),
        _run("a", 1, 0.8, {f"1:r{i}": 1.0 if i < 6 else 0.0 for i in range(8)}),
        _run("b", 0, 0.0, {f"0:r{i}": 0.0 for i in range(8)}),
        _run("b", 1, 0.2, {f"1:r{i}": 0.0 for i in range(8)}),
    ]
    best, other = summarize(runs, ["b", "a"])
    assert best.strategy == "a" and best.is_best and best.p_vs_best is None
    assert best.mean == pytest.approx(0.9) and best.sd == pytest.approx(0.1414, abs=1e-3)
    assert other.mean == pytest.approx(0.1) and other.mean_calls == 50
    # 14 paired rows where a beats b by 1.0, none the other way: exact p = 2 / 2**14.
    assert other.p_vs_best == pytest.approx(2 / 2**14)


def test_compare_on_the_fake_model(fake_model: FakeModel, tmp_path: Path) -> None:
    result = builder(tmp_path).compare(
        START, ["iterative", "random", "instructions"], seeds=2, max_calls=60
    )
    assert result.strategies[0].strategy == "iterative"
    assert len(result.runs) == 6 and {r.seed for r in result.runs} == {0, 1}
    for run in result.runs:
        assert run.metric_calls <= 60  # the same budget for everyone
        assert run.run_dir is not None and Path(run.run_dir).is_dir()
    assert len({r.run_dir for r in result.runs}) == 6  # no shared cache between runs
    saved = json.loads((Path(result.directory) / "compare.json").read_text())
    assert [s["strategy"] for s in saved["strategies"]] == [s.strategy for s in result.strategies]
    table = (Path(result.directory) / "compare.md").read_text()
    assert "| iterative |" in table and "p vs best" in table


def test_cli_compare(
    fake_model: FakeModel,
    tmp_path: Path,
    dataset_file: Path,
    prompt_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from reflex.cli import main

    out = tmp_path / "cmp"
    args = ["compare", str(dataset_file), str(prompt_file), "-m", "fake/task"]
    args += ["--reasoning-model", "fake/reasoner", "--strategies", "iterative,gepa"]
    args += ["--seeds", "2", "--max-calls", "80", "--max-iterations", "2", "--out-dir", str(out)]
    with pytest.raises(SystemExit) as done:
        main(args)
    assert done.value.code in (0, None)
    captured = capsys.readouterr()
    assert "| gepa |" in captured.out and "| iterative |" in captured.out
    assert (out / "compare.json").is_file() and (out / "compare.md").is_file()
    with pytest.raises(SystemExit) as done:
        main([*args[:-2], "--strategies", "nope", "--out-dir", str(out)])
    assert done.value.code == 2 and "nope" in capsys.readouterr().err
