"""The final test evaluation's cost reserve under --max-cost, with a baseline from the cache."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ANSWERS, KEYWORD, make_rows

from reflex import OptimizationResult, PromptOptimizer
from reflex.models.client import load_litellm
from reflex.testing import FakeModel, FakeRequest

START = "Classify the sentiment."
UNIT = 2.0**-10  # the price of one output token: sums of it are exact in binary floating point


@pytest.fixture
def priced_task() -> Iterator[str]:
    """A task model LiteLLM prices at UNIT per output token (input free): UNIT per answer."""
    litellm = load_litellm()
    name = "fake/reflex-reserve-task"
    litellm.register_model(
        {
            name: {
                "input_cost_per_token": 0.0,
                "output_cost_per_token": UNIT,
                "litellm_provider": "fake",
                "mode": "chat",
            }
        }
    )
    yield name
    litellm.model_cost.pop(name, None)


@pytest.fixture
def fake() -> FakeModel:
    """One-word answers; every reasoning call proposes a prompt no earlier call proposed."""
    count = itertools.count(1)

    def answer(request: FakeRequest) -> str:
        if request.model.startswith("fake/reasoner"):
            return f"<prompt>{START} {KEYWORD} Variant {next(count)}.</prompt>"
        ideal = ANSWERS[request.user]
        right = KEYWORD in request.system or int(request.user.split()[1].rstrip(":")) % 3 == 0
        return ideal if right else "neutral"

    return FakeModel(answer).install()


def run(
    task: str, run_dir: Path, reasoner: str, iterations: int, max_cost: float | None = None
) -> OptimizationResult:
    opt = (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider(task)
        .add_metric("exact_match")
        .set_reasoning_model(reasoner)
        .set_run_dir(run_dir)
        .configure(max_iterations=iterations, early_stopping_patience=None)
    )
    if max_cost is not None:
        opt.set_budget(max_cost=max_cost)
    return opt.run(START)


def test_cached_baseline_still_reserves_the_final_evaluations_cost(
    fake: FakeModel, priced_task: str, tmp_path: Path
) -> None:
    # An earlier run fills the shared cache: the later runs' baselines cost them nothing.
    run(priced_task, tmp_path, "fake/reasoner-a", 1)
    # Unbudgeted, one iteration: what iteration 1 and the final evaluation cost.
    ref = run(priced_task, tmp_path, "fake/reasoner-b", 1)
    assert ref.baseline is not None and ref.final is not None
    final_cost = len(ref.final.samples) * UNIT  # a new prompt: every test row paid
    assert ref.best_prompt != START and ref.usage["task"]["calls"] > len(ref.final.samples)
    max_cost = ref.usage["total"]["cost"]

    # Budgeted at exactly that, with more iterations to spend on. Reserving only what the
    # baseline was charged ($0) lets iterations 2+ spend the final's money and the final is
    # refused; reserving what the baseline's answers cost stops after iteration 1.
    result = run(priced_task, tmp_path, "fake/reasoner-c", 5, max_cost=max_cost)
    assert result.baseline is not None and result.baseline.mean_score == ref.baseline.mean_score
    assert result.stop_reason.startswith("budget exhausted: cost budget")
    assert result.final is not None and result.final.system_prompt == result.best_prompt
    assert result.best_prompt != START and result.final.mean_score == 1.0
    assert result.usage["total"]["cost"] <= max_cost
    assert result.usage["task"]["cached_cost"] >= final_cost  # the baseline's hits, at least
    assert len(result.iterations) == 1


def test_unpriced_model_reserves_no_cost(fake: FakeModel, tmp_path: Path) -> None:
    # Costs unknown: nothing is reserved (nor spent, as --max-cost sees it), so every
    # iteration runs and the final is measured.
    result = run("fake/reflex-unpriced-task", tmp_path, "fake/reasoner", 3, max_cost=0.01)
    assert result.completed and len(result.iterations) == 3
    assert result.final is not None and result.usage["total"]["cost"] is None  # unknown, not 0
    assert result.usage["task"]["cost_unknown"] > 0 and result.usage["task"]["cached_cost"] == 0
