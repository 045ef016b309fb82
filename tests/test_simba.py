"""simba: sampled runs find the unstable rows, rules come from their contrast, demos from wins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ANSWERS, KEYWORD, make_rows, task_answer
from test_engine import START, builder

from reflex import ConfigurationError, PromptOptimizer
from reflex.config import RunConfig
from reflex.run.presets import SIMBA_SAMPLES, resolve_preset
from reflex.testing import FakeModel, FakeRequest
from reflex_strategies.simba import RULES_HEADER, SimbaOptions


def _index(request: FakeRequest) -> int:
    return int(request.user.split()[1].rstrip(":"))


def sampled_task(request: FakeRequest) -> str:
    """At temperature > 0, rows with index % 3 == 1 are right on even seeds only (they vary);
    index % 3 == 0 always right, index % 3 == 2 always wrong. KEYWORD fixes every row."""
    ideal = ANSWERS.get(request.user, "unknown")
    if KEYWORD in request.system or not request.params.get("temperature"):
        return task_answer(request)
    index = _index(request)
    seed = int(str(request.params.get("seed", 0)))
    right = index % 3 == 0 or (index % 3 == 1 and seed % 2 == 0)
    return ideal if right else f"I think this review is {ideal}."


def run(tmp_path: Path, briefs: list[str], rules: str = KEYWORD, **options: object) -> object:
    def answer(request: FakeRequest) -> str:
        if request.model == "fake/reasoner":
            briefs.append(request.user)
            return f"<diagnosis>the worse answers ramble</diagnosis><rules>- {rules}</rules>"
        return sampled_task(request)

    fake = FakeModel(answer).install()
    result = (
        builder(tmp_path)
        .set_strategy("simba", **options)
        .configure(max_iterations=2, early_stopping_patience=None)
        .run(START)
    )
    return result, fake


def test_varying_and_failing_rows_are_sent_most_varying_first(tmp_path: Path) -> None:
    briefs: list[str] = []
    run(tmp_path, briefs, rules="Be careful.", max_rows=30)
    assert briefs
    shown = [line for line in briefs[0].splitlines() if line.startswith("input: ")]
    indices = [int(line.split()[2].rstrip(":")) for line in shown]
    assert indices and all(i % 3 != 0 for i in indices)  # a stable, right row is never sent
    kinds = [i % 3 for i in indices]
    # varying rows (shown twice: better and worse) come before the always-failing ones
    assert 1 in kinds and kinds == sorted(kinds)
    assert "better answer:" in briefs[0] and "every sample failed" in briefs[0]


def test_rules_from_the_contrast_end_up_in_the_accepted_prompt(tmp_path: Path) -> None:
    briefs: list[str] = []
    result, fake = run(tmp_path, briefs)
    [first, *_] = [r for r in result.iterations if r.reasoning == "the worse answers ramble"]
    assert first.accepted and f"{RULES_HEADER}\n- {KEYWORD}" in first.system_prompt
    assert result.best_prompt.startswith(START) and KEYWORD in result.best_prompt
    # the sampled runs were decoded at the option's temperature, each with its own seed
    sampled = [r.params for r in fake.calls_to("fake/task") if r.params.get("temperature")]
    assert {p["temperature"] for p in sampled} == {0.7}
    assert len({p["seed"] for p in sampled}) >= 3


def test_demos_come_from_successful_samples(tmp_path: Path) -> None:
    briefs: list[str] = []
    result, _ = run(tmp_path, briefs, rules="Be careful.", max_rows=30)
    demos = [r for r in result.iterations if r.reasoning.startswith("demo from")]
    assert demos
    for record in demos:
        row = int(record.reasoning.rsplit("r", 1)[1])
        assert row % 3 != 2  # an always-failing row never becomes a demo
        assert "Examples:" in record.system_prompt
        assert f"review {row}:" in record.system_prompt


def test_needs_a_reasoning_model_at_zero_calls(tmp_path: Path) -> None:
    fake = FakeModel(sampled_task).install()
    opt = (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("simba")
        .set_run_dir(tmp_path)
    )
    with pytest.raises(ConfigurationError, match="'simba' needs a reasoning model"):
        opt.run(START)
    assert fake.requests == []


def test_max_calls_bounds_the_sampled_search(tmp_path: Path) -> None:
    briefs: list[str] = []

    def answer(request: FakeRequest) -> str:
        if request.model == "fake/reasoner":
            briefs.append(request.user)
            return f"<rules>- rule {len(briefs)}</rules>"
        return sampled_task(request)

    fake = FakeModel(answer).install()
    result = (
        builder(tmp_path)
        .set_strategy("simba")
        .set_budget(max_calls=120)
        .configure(early_stopping_patience=None)
        .run(START)
    )
    assert len(fake.calls_to("fake/task")) <= 120
    assert result.stop_reason is not None and "budget" in result.stop_reason
    events = (Path(str(result.run_dir)) / "events.jsonl").read_text().splitlines()
    steps = [json.loads(e) for e in events if '"simba_rows"' in e]
    assert steps and all(s["rows"] for s in steps)


def test_the_medium_preset_adds_the_sampled_runs_per_candidate() -> None:
    config = RunConfig(models=["fake/task"], strategy="simba", budget={"preset": "medium"})
    found = resolve_preset(config, train=60, val=20, test=20)
    # fixed 70; per candidate: val 20 + batch 8 + half of 3 samples x 8 rows (two a step)
    assert found is not None and found.calls == 70 + 8 * 1 * (28 + 12)
    assert SimbaOptions().samples == SIMBA_SAMPLES  # the preset's copy of the default
    more = RunConfig(
        models=["fake/task"],
        strategy="simba",
        strategy_options={"samples": 5},
        budget={"preset": "medium"},
    )
    bigger = resolve_preset(more, train=60, val=20, test=20)
    assert bigger is not None and bigger.per_candidate == 28 + 20


def test_dry_run_prints_the_sampled_plan_at_zero_calls(tmp_path: Path) -> None:
    def refuse(request: FakeRequest, n: int) -> BaseException | None:
        raise AssertionError(f"a dry run made call {n}")

    fake = FakeModel(sampled_task, fault=refuse).install()
    opt = builder(tmp_path).set_strategy("simba").configure(max_iterations=2)
    plan = opt.plan(START)
    assert fake.requests == []
    search = {p.phase: p for p in plan.phases}["search"]
    # two candidates: each a screen (8 rows), a val pass (6 rows) and its share of the samples
    val = plan.rows["val"]
    assert search.calls == 2 * (8 + val + 12)
    assert any("search" in line for line in plan.lines())
