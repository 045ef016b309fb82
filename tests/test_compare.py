"""compare: strategy x seed x dataset at one call budget, summary stats, JSON + table, CLI."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from conftest import make_rows

from reflex import ConfigurationError, PromptOptimizer, load_dataset
from reflex.cli import build_cli
from reflex.data.dataset import Dataset
from reflex.grid.compare import DEFAULT_SEEDS, RunSummary, compare, summarize
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
    result = compare(
        builder(tmp_path), START, ["iterative", "random", "instructions"], seeds=2, max_calls=60
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


def test_each_dataset_is_summarized_on_its_own() -> None:
    """Same seeds and row ids on two datasets: best and p are per dataset, never pooled."""
    ids = [f"0:r{i}" for i in range(8)]

    def run(strategy: str, dataset: str, correct: int) -> RunSummary:
        scores = {k: 1.0 if i < correct else 0.0 for i, k in enumerate(ids)}
        summary = _run(strategy, 0, correct / 8, scores)
        return RunSummary(**{**summary.__dict__, "dataset": dataset})

    runs = [run("a", "easy", 8), run("b", "easy", 2), run("a", "hard", 1), run("b", "hard", 7)]
    summaries = summarize(runs, ["a", "b"])
    assert [(s.dataset, s.strategy, s.is_best) for s in summaries] == [
        ("easy", "a", True),
        ("easy", "b", False),
        ("hard", "b", True),
        ("hard", "a", False),
    ]
    # Within each dataset 6 paired rows differ, all one way: p = 2 / 2**6. Pooled across the
    # datasets they would cancel out (12 differences, 6 each way).
    assert summaries[1].p_vs_best == pytest.approx(2 / 2**6)
    assert summaries[3].p_vs_best == pytest.approx(2 / 2**6)
    for dataset in ("easy", "hard"):
        alone = summarize([r for r in runs if r.dataset == dataset], ["a", "b"])
        assert alone == [s for s in summaries if s.dataset == dataset]


def _datasets() -> list[Dataset]:
    rows = make_rows(90)  # three disjoint slices the fake model knows the answers to
    return [load_dataset(rows[k * 30 : (k + 1) * 30], name=f"d{k}") for k in range(3)]


def test_compare_over_strategies_seeds_and_datasets(fake_model: FakeModel, tmp_path: Path) -> None:
    strategies = ["iterative", "random"]
    result = compare(
        builder(tmp_path), START, strategies, seeds=2, max_calls=40, datasets=_datasets()
    )
    assert result.datasets == ["d0", "d1", "d2"]
    assert len(result.runs) == 12  # 2 strategies x 2 seeds x 3 datasets
    cells = {(r.dataset, r.strategy, r.seed) for r in result.runs}
    assert cells == {(d, s, k) for d in result.datasets for s in strategies for k in (0, 1)}
    for run in result.runs:  # each cell a normal run with its own record, on its dataset
        assert run.run_dir is not None
        assert Path(run.run_dir).is_relative_to(Path(result.directory, run.dataset).resolve())
        config = json.loads(next(Path(run.run_dir).rglob("config.json")).read_text())
        assert config["dataset_name"] == run.dataset
        assert (config["seed"], config["strategy"]) == (run.seed, run.strategy)
    assert [(s.dataset, s.strategy) for s in result.strategies if s.is_best] == [
        (d, result.best(d).strategy) for d in result.datasets
    ]
    for dataset in result.datasets:
        mine = [r for r in result.runs if r.dataset == dataset]
        assert summarize(mine, strategies) == [s for s in result.strategies if s.dataset == dataset]
    saved = json.loads((Path(result.directory) / "compare.json").read_text())
    assert saved["datasets"] == ["d0", "d1", "d2"]
    assert [s["dataset"] for s in saved["strategies"]] == ["d0", "d0", "d1", "d1", "d2", "d2"]
    table = (Path(result.directory) / "compare.md").read_text()
    assert "| dataset | strategy |" in table and "datasets d0, d1, d2" in table
    assert sum(line.startswith("| d1 |") for line in table.splitlines()) == 2
    # A cell of the grid is the run one would make alone: same final test score.
    cell = next(r for r in result.runs if (r.dataset, r.strategy, r.seed) == ("d2", "random", 1))
    alone_builder = builder(tmp_path / "alone").set_dataset(_datasets()[2])
    alone = compare(alone_builder, START, ["random"], seeds=[1], max_calls=40)
    assert alone.runs[0].final == cell.final and alone.runs[0].per_example == cell.per_example


def test_dataset_labels_are_unique_and_a_bad_dataset_fails_first(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    rows = make_rows(60)
    same = [load_dataset(rows[:30], name="data"), load_dataset(rows[30:], name="data")]
    result = compare(builder(tmp_path), START, ["random"], seeds=1, max_calls=40, datasets=same)
    assert result.datasets == ["data", "data-2"]
    assert {r.dataset for r in result.runs} == {"data", "data-2"}
    no_refs = [{"id": "x", "input": "review 1: awful film"}]
    with pytest.raises(ConfigurationError, match="no reference answers"):
        compare(
            builder(tmp_path / "bad"), START, ["random"], seeds=1, datasets=[rows[:30], no_refs]
        )
    assert not (tmp_path / "bad" / "compare").exists()  # nothing ran


def test_cli_compare_over_datasets(
    fake_model: FakeModel,
    tmp_path: Path,
    dataset_file: Path,
    prompt_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from reflex.cli import main

    rows = make_rows(90)
    more = []
    for k in (1, 2):
        path = tmp_path / f"more{k}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows[k * 30 : (k + 1) * 30]))
        more += ["--dataset", str(path)]
    common = ["-m", "fake/task", "--reasoning-model", "fake/reasoner", "--strategies", "random"]
    common += ["--seeds", "2", "--max-calls", "30", "--max-iterations", "1"]
    runs = [
        # DATASET PROMPT plus two --dataset; then --dataset only, with PROMPT alone.
        ([str(dataset_file), str(prompt_file), *more], ["data", "more1", "more2"]),
        ([*more, str(prompt_file)], ["more1", "more2"]),
    ]
    for k, (given, expected) in enumerate(runs):
        out = tmp_path / f"cmp{k}"
        with pytest.raises(SystemExit) as done:
            main(["compare", *given, *common, "--out-dir", str(out)])
        assert done.value.code in (0, None)
        printed = capsys.readouterr().out
        assert printed.startswith("| dataset | strategy |")
        saved = json.loads((out / "compare.json").read_text())
        assert saved["datasets"] == expected
        assert sorted((r["dataset"], r["seed"]) for r in saved["runs"]) == sorted(
            (d, s) for d in expected for s in (0, 1)
        )
        assert all((out / d / "random-seed0").is_dir() for d in expected)


def test_the_seeds_default_is_written_once_for_compare_and_its_command() -> None:
    assert inspect.signature(compare).parameters["seeds"].default == DEFAULT_SEEDS
    command = build_cli().commands["compare"]
    option = next(p for p in command.params if p.name == "seeds")
    assert option.default == DEFAULT_SEEDS
