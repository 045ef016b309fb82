"""The priced plan at 0 calls (``--dry-run``, ``PromptOptimizer.plan``, ``run(dry_run=True)``)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows, responder

from reflex import ConfigurationError, PromptOptimizer
from reflex.cli import main
from reflex.models.tokens import count_tokens
from reflex.run.plan import PricedPlan
from reflex.testing import FakeModel, FakeRequest
from reflex.testing.endpoint import FaultPlan, Request, serve

START = "Classify the sentiment."


def _refuse_every_call(request: FakeRequest, n: int) -> BaseException | None:
    raise AssertionError(f"a dry run made call {n}")


def _builder(tmp_path: Path, rows: int = 100) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows(rows))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("instructions")
        .set_run_dir(tmp_path / "runs")
        .configure(early_stopping_patience=None)
    )


def test_a_dry_run_makes_no_call_and_writes_nothing(tmp_path: Path) -> None:
    fake = FakeModel(responder, fault=_refuse_every_call).install()
    plan = _builder(tmp_path).set_budget("medium").run(START, dry_run=True)
    assert isinstance(plan, PricedPlan)
    assert fake.requests == [] and not (tmp_path / "runs").exists()
    assert plan.rows == {"train": 60, "val": 20, "test": 20}
    assert [p.phase for p in plan.phases] == ["preflight", "baselines", "search", "final"]
    assert plan.calls == plan.budget["max_calls"] == 70 + 8 * 28  # the preset, spent in full


def test_the_mde_on_twenty_test_rows_says_five_points_cannot_be_shown(tmp_path: Path) -> None:
    FakeModel(responder, fault=_refuse_every_call).install()
    plan = _builder(tmp_path).plan(START)
    assert plan.power["rows"] == 20 and plan.power["scores"] == "binary"
    assert plan.power["no_row_worse"] > 0.3 and plan.power["with_broken_rows"] > 0.5
    [line] = [x for x in plan.lines() if x.startswith("power")]
    assert "on 20 test rows" in line and f"+{plan.power['no_row_worse']:.3f}" in line


def test_the_fixed_phases_are_the_calls_a_real_run_makes(tmp_path: Path) -> None:
    FakeModel(responder, fault=_refuse_every_call).install()
    plan = _builder(tmp_path).configure(max_iterations=2).plan(START)
    FakeModel(responder).install()
    result = _builder(tmp_path).configure(max_iterations=2).run(START)
    rows = Path(str(result.run_dir), "evaluations.jsonl").read_text().splitlines()
    labels = Counter(json.loads(row)["label"] for row in rows)
    phases = {p.phase: p.calls for p in plan.phases}
    assert phases["preflight"] == labels["train:preflight"] == 10
    assert phases["baselines"] == labels["test:baseline"] + labels["val:baseline"] == 40
    assert phases["final"] == labels["test:final"] == 20
    assert plan.candidates == 2


def test_tokens_and_cost_come_from_the_prompt_rows_and_price(tmp_path: Path) -> None:
    FakeModel(responder, fault=_refuse_every_call).install()
    plan = _builder(tmp_path).set_price("fake/task", 1.0, 2.0).plan(START)
    rows = make_rows(100)
    per_input = count_tokens(START) + sum(count_tokens(r["input"]) for r in rows) / len(rows)
    per_output = sum(count_tokens(r["ideal"]) for r in rows) / len(rows)
    preflight = plan.phases[0]
    assert preflight.input_tokens == round(10 * per_input)
    assert preflight.output_tokens == round(10 * per_output)
    assert preflight.cost == pytest.approx(10 * (per_input * 1e-6 + per_output * 2e-6))
    assert plan.cost == pytest.approx(sum(p.cost for p in plan.phases)) and plan.unpriced == ()


def test_a_model_without_a_price_is_unpriced_not_free(tmp_path: Path) -> None:
    FakeModel(responder, fault=_refuse_every_call).install()
    plan = _builder(tmp_path).plan(START)
    assert plan.unpriced == ("fake/task",)
    assert all(p.unpriced_calls == p.calls for p in plan.phases)
    [line] = [x for x in plan.lines() if x.startswith("cost")]
    assert "unpriced" in line and "--price" in line and "$" not in line


def test_a_dry_run_refuses_bad_input_before_any_call(tmp_path: Path) -> None:
    FakeModel(responder, fault=_refuse_every_call).install()
    with pytest.raises(ConfigurationError, match="needs a reasoning model"):
        _builder(tmp_path).set_strategy("iterative").plan(START)
    with pytest.raises(ConfigurationError, match="leave resume out"):
        _builder(tmp_path).run(START, resume=True, dry_run=True)
    assert not (tmp_path / "runs").exists()


def _cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> object:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in make_rows(100)))
    (tmp_path / "p.md").write_text(START + "\n")
    with pytest.raises(SystemExit) as exc:
        main(["optimize", "d.jsonl", "p.md", *argv])
    return exc.value.code


def test_the_cli_dry_run_against_an_endpoint_that_fails_every_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    seen: list[Request] = []
    with serve(faults=FaultPlan(rate=1.0, kinds=("500",)), capture=seen) as url:
        argv = ["-m", "openai/m", "--api-base", str(url), "-s", "instructions", "--dry-run"]
        assert _cli(tmp_path, monkeypatch, [*argv, "--budget", "light"]) == 0
        text = capsys.readouterr().out
        assert _cli(tmp_path, monkeypatch, [*argv, "--json"]) == 0
        data: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert seen == [] and not (tmp_path / ".reflex").exists()
    assert "preset: 70 + 4 x 1 x 28 = 182" in text and "power     on 20 test rows" in text
    assert data["rows"] == {"train": 60, "val": 20, "test": 20} and data["calls"] == sum(
        p["calls"] for p in data["phases"]
    )


def test_the_cli_json_needs_dry_run_and_dry_run_no_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    FakeModel(responder, fault=_refuse_every_call).install()
    assert _cli(tmp_path, monkeypatch, ["-m", "fake/task", "--json"]) == 2
    assert "--json" in capsys.readouterr().err
    assert _cli(tmp_path, monkeypatch, ["-m", "fake/task", "--dry-run", "--resume"]) == 2
    assert "a dry run plans a new run" in capsys.readouterr().err
    assert _cli(tmp_path, monkeypatch, ["-m", "fake/task", "--dry-run", "-s", "nope"]) == 2
    assert "unknown strategy 'nope'" in capsys.readouterr().err
    assert not (tmp_path / ".reflex").exists()
