"""The CI gate's parts (reflex.run.gate): a baseline from a score or a run record on disk, the
rows it fixes, the metrics and judges rebuilt from config.json, the verdict's rules, and the
evaluation on the engine's own path (fake model, a real cache file). The command itself:
tests/test_check.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import BETTER, make_rows

from reflex.config import RunConfig
from reflex.data.dataset import Dataset, load_dataset
from reflex.errors import ConfigurationError
from reflex.judging.judge import LLMJudge
from reflex.redact import REDACTED
from reflex.result import EvalSnapshot, Sample
from reflex.run.gate import (
    Baseline,
    build_evaluator,
    compare,
    evaluate_prompt,
    load_baseline,
    paid_calls,
    point_judges,
    rebuild_metrics,
    record_config,
    rows_for,
    run_evaluation,
    supplied_judge,
)
from reflex.testing import FakeModel
from reflex_metrics.exact_match import ExactMatch

START = "Classify the sentiment."
MODEL = "fake/task"


def write_record(folder: Path, result: dict[str, Any], splits: dict[str, list[str]]) -> Path:
    """A run record as a run leaves it: run.json, result.json, splits.json, config.json."""
    folder.mkdir(parents=True)
    files = {
        "run.json": {"run_id": folder.name},
        "result.json": result,
        "splits.json": splits,
        "config.json": {"models": [MODEL], "metrics": ["exact_match"]},
    }
    for name, data in files.items():
        (folder / name).write_text(json.dumps(data), encoding="utf-8")
    return folder


def final(*scores: float | None) -> dict[str, Any]:
    samples = [
        {"example_id": f"r{i:03d}", "model": MODEL, "score": s} for i, s in enumerate(scores)
    ]
    known = [s for s in scores if s is not None]
    return {"mean_score": sum(known) / len(known), "samples": samples}


def snapshot(*scores: float, errors: int = 0) -> EvalSnapshot:
    samples = tuple(Sample(f"r{i:03d}", MODEL, "x", s) for i, s in enumerate(scores))
    mean = sum(scores) / len(scores)
    return EvalSnapshot("p", "test", mean, {"exact_match": mean}, samples, n_errors=errors)


@pytest.fixture
def rows() -> Dataset:
    return load_dataset(make_rows(12), name="reviews")


def test_a_score_is_a_baseline_between_0_and_1() -> None:
    assert load_baseline("0.82", None) == Baseline(score=0.82, source="score 0.82")
    with pytest.raises(ConfigurationError, match=r"--baseline 1\.5: a score must be between 0"):
        load_baseline("1.5", None)


def test_a_run_record_fixes_the_score_rows_and_pairs(tmp_path: Path) -> None:
    result = {"final": final(1.0, 0.0, None), "best_score_val": 0.75}
    splits = {"train": ["r005"], "val": ["r004"], "test": ["r000", "r001", "r002"]}
    run = write_record(tmp_path / "runs" / "run-a", result, splits)
    for ref in (str(run), str(run / "result.json"), "run-a"):  # a folder, its result, its id
        base = load_baseline(ref, None, run_dir=tmp_path)
        assert (base.score, base.source, base.ids) == (0.5, "run run-a (test)", splits["test"])
        assert base.per_example == {f"r000@{MODEL}": 1.0, f"r001@{MODEL}": 0.0}  # None dropped
        assert base.config == {"models": [MODEL], "metrics": ["exact_match"]}
    val = load_baseline(str(run), "val")
    assert (val.score, val.ids, val.per_example) == (0.75, ["r004"], {})


def test_a_record_without_the_score_asked_for_is_refused(tmp_path: Path) -> None:
    run = write_record(tmp_path / "run-b", {"final": None}, {"test": ["r000"]})
    with pytest.raises(ConfigurationError, match="run run-b has no final test score"):
        load_baseline(str(run), None)
    with pytest.raises(ConfigurationError, match="records no val score of its best prompt"):
        load_baseline(str(run), "val")


def test_rows_are_the_records_ids_or_the_dataset(rows: Dataset) -> None:
    record = Baseline(0.5, "run x (test)", "test", ids=["r003", "r001"])
    assert [e.id for e in rows_for(rows, record)] == ["r003", "r001"]  # the record's order
    assert len(rows_for(rows, Baseline(0.5, "score 0.5"))) == 12
    other = Baseline(0.5, "run x (test)", "test", ids=["r001", "zz1", "zz2"])
    with pytest.raises(ConfigurationError, match=r"2 test row\(s\) of run x \(test\) are not in"):
        rows_for(rows, other)
    with pytest.raises(ConfigurationError, match="--split val: no rows of the dataset"):
        rows_for(rows, Baseline(0.5, "score 0.5", "val"))  # the rows name no split


def test_metrics_are_rebuilt_by_name_or_refused_with_what_to_pass() -> None:
    plain = RunConfig.model_validate({"models": [MODEL], "metrics": ["exact_match"]})
    [metric] = rebuild_metrics(plain)
    assert isinstance(metric, ExactMatch)
    judged = RunConfig.model_validate({"models": [MODEL], "metrics": ["llm_judge"]})
    with pytest.raises(ConfigurationError, match="pass --judge PROVIDER/MODEL"):
        rebuild_metrics(judged)
    [judge] = rebuild_metrics(judged, supplied_judge("fake/judge", None))
    assert isinstance(judge, LLMJudge) and judge.judge.model == "fake/judge"
    with pytest.raises(ConfigurationError, match="does not score with llm_judge: drop --judge"):
        rebuild_metrics(plain, supplied_judge("fake/judge", None))


def test_a_judge_is_supplied_only_with_its_model() -> None:
    assert supplied_judge(None, None) == []
    with pytest.raises(ConfigurationError, match="--judge-criteria needs --judge"):
        supplied_judge(None, "criteria.md")


def test_judges_are_pointed_at_the_url_given() -> None:
    hidden = LLMJudge("openai/j", api_base=f"https://{REDACTED}@judge.example/v1")
    with pytest.raises(ConfigurationError, match="stored redacted: pass --judge-api-base URL"):
        point_judges([hidden], None)
    [pointed] = point_judges([hidden], "http://127.0.0.1:9/v1")
    assert pointed.judge.api_base == "http://127.0.0.1:9/v1"  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match="--judge-api-base: no judge to send it to"):
        point_judges([ExactMatch()], "http://127.0.0.1:9/v1")
    assert point_judges([ExactMatch()], None)[0].name == "exact_match"


def test_a_record_config_needs_the_endpoint_its_record_redacted() -> None:
    stored = {"models": [MODEL], "api_base": f"https://{REDACTED}@host.example/v1"}
    with pytest.raises(ConfigurationError, match="stored redacted: pass --api-base URL"):
        record_config(stored, None)
    assert record_config(stored, "http://127.0.0.1:9/v1").api_base == "http://127.0.0.1:9/v1"
    plain = {"models": [MODEL], "api_base": "http://127.0.0.1:8/v1"}
    assert record_config(plain, None).api_base == "http://127.0.0.1:8/v1"


def test_checks_rule_is_the_tolerance_and_errored_rows() -> None:
    base = Baseline(0.8, "score 0.8")
    current = snapshot(1.0, 1.0, 0.0, 1.0)  # 0.75
    assert not compare(base, current, tolerance=0.1).regressed
    lower = compare(base, current, tolerance=0.01)
    assert lower.regressed and lower.delta == pytest.approx(-0.05)
    assert lower.lines()[-1] == "verdict   REGRESSION" and "change    -0.0500" in lower.lines()[2]
    assert compare(base, snapshot(1.0, errors=1), tolerance=0.5).regressed  # a row errored


def test_promotes_rule_passes_a_drop_the_paired_test_cannot_tell_from_noise() -> None:
    pairs = {f"r{i:03d}@{MODEL}": 1.0 for i in range(4)}
    base = Baseline(1.0, "run x (test)", "test", per_example=pairs)
    current = snapshot(1.0, 1.0, 1.0, 0.0)  # one row of four lost
    outcome = compare(base, current, tolerance=0.0, alpha=0.05)
    assert outcome.test is not None and outcome.test.n == 4 and not outcome.test.significant
    assert not outcome.regressed and compare(base, current, tolerance=0.0).regressed
    assert "paired test of the 4 shared rows significant (p < 0.05)" in outcome.rule()


def test_evaluation_takes_the_engines_path_and_its_cache(
    fake_model: FakeModel, rows: Dataset, tmp_path: Path
) -> None:
    config = RunConfig.model_validate({"models": [MODEL], "metrics": ["exact_match"]})
    cache = tmp_path / "cache.sqlite"
    first = evaluate_prompt(BETTER, list(rows), config, [ExactMatch()], cache=cache)
    assert first.mean_score == 1.0 and len(first.samples) == 12
    paid = len(fake_model.requests)
    evaluator = build_evaluator(config, [ExactMatch()], cache)
    assert paid_calls(evaluator, BETTER, list(rows)) == 0  # every answer is in the cache
    assert paid_calls(evaluator, START, list(rows)) == 12
    again = run_evaluation(evaluator, BETTER, list(rows), "check")
    assert again.mean_score == 1.0 and len(fake_model.requests) == paid == 12


def test_an_unknown_provider_is_refused_before_any_call(fake_model: FakeModel) -> None:
    config = RunConfig.model_validate({"models": ["nowhere/model"], "metrics": ["exact_match"]})
    with pytest.raises(ConfigurationError, match="nowhere"):
        build_evaluator(config, [ExactMatch()])
    assert fake_model.requests == []
