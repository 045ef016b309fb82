"""Budgets per role and prices (issue 18, item 4): ``--max-total-calls`` counts judge and
reasoning calls too; ``--price`` gives unpriced models a cost so ``--max-cost`` binds; a cost
budget that could not count some calls says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import make_rows, responder
from test_judge import full_responder

from reflex import PromptOptimizer
from reflex.cli import build_cli
from reflex.errors import ConfigurationError
from reflex.result import RunEnd, StopReason
from reflex.testing import FakeModel

START = "Classify the sentiment."


def judged(run_dir: Path) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_judge("fake/judge", criteria="Is the answer a single sentiment word?")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(run_dir)
        .configure(max_iterations=5, early_stopping_patience=None)
    )


def test_max_total_calls_counts_judge_and_reasoning_calls(tmp_path: Path) -> None:
    FakeModel(full_responder).install()
    result = judged(tmp_path).set_budget(max_total_calls=80).run(START)
    usage = result.usage
    assert usage["judge"]["calls"] > 0 and usage["reasoning"]["calls"] > 0
    assert usage["total"]["calls"] <= 80  # every role counted, the final included
    assert result.stop is StopReason.BUDGET and "total-call budget" in result.stop_reason
    assert result.end_state is RunEnd.PAUSED_BUDGET and result.final is not None


def test_max_calls_counts_task_calls_only(tmp_path: Path) -> None:
    FakeModel(full_responder).install()
    result = judged(tmp_path).set_budget(max_calls=60).run(START)
    assert result.usage["task"]["calls"] <= 60 < result.usage["total"]["calls"]


def test_price_gives_an_unpriced_model_a_cost_and_max_cost_binds(tmp_path: Path) -> None:
    FakeModel(responder).install()
    base = (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .configure(max_iterations=5, early_stopping_patience=None)
    )
    unpriced = base.set_run_dir(tmp_path / "a").set_budget(max_cost=0.01).run(START)
    assert unpriced.usage["total"]["cost"] is None and unpriced.usage["total"]["cost_unknown"]
    assert unpriced.stop is not StopReason.BUDGET  # nothing could be counted against it
    [warning] = [w for w in unpriced.warnings if w["kind"] == "unpriced_calls"]
    assert "--max-cost $0.01 was not enforced" in warning["message"]
    assert "--price MODEL=IN:OUT" in warning["message"]

    # $1000 per million tokens either way: ~10 tokens a task call is $0.01 a call.
    priced = (
        base.set_run_dir(tmp_path / "b")
        .set_price("fake/task", 1000, 1000)
        .set_price("fake/reasoner", 0, 0)
        .set_budget(max_cost=0.5)
        .run(START)
    )
    assert priced.usage["task"]["cost"] > 0 and priced.usage["total"]["cost_unknown"] == 0
    assert priced.stop is StopReason.BUDGET and "cost budget" in priced.stop_reason
    assert priced.final is not None and priced.end_state is RunEnd.PAUSED_BUDGET
    assert not [w for w in priced.warnings if w["kind"] == "unpriced_calls"]


def test_price_flag_and_bad_prices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match="must be finite numbers >= 0"):
        PromptOptimizer().set_price("fake/task", -1, 2)
    data = tmp_path / "d.jsonl"
    import json

    data.write_text("".join(json.dumps(r) + "\n" for r in make_rows()), encoding="utf-8")
    prompt = tmp_path / "p.md"
    prompt.write_text(START + "\n", encoding="utf-8")
    FakeModel(responder).install()
    args = ["optimize", str(data), str(prompt), "-m", "fake/task", "-s", "instructions"]
    bad = CliRunner().invoke(build_cli(), [*args, "--price", "fake/task=0.2"])
    assert bad.exit_code == 2 and "write MODEL=IN:OUT" in bad.output
    ok = CliRunner().invoke(
        build_cli(), [*args, "--price", "fake/task=1:2", "--results-json", "r.json"]
    )
    assert ok.exit_code in (0, 4), ok.output
    assert json.loads(Path("r.json").read_text())["usage"]["task"]["cost"] > 0
