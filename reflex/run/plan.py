"""The priced plan of a run, made before any call (``--dry-run``, ``PromptOptimizer.plan``).

Everything here is counted or looked up, never asked of a model: the rows of each split, the
task calls of each phase (preflight, the val and test baselines, the search, the final test
evaluation), their tokens (:func:`reflex.models.tokens.count_tokens` on the prompt and the
rows), their cost from LiteLLM's price table (``--price`` first; a model it cannot price is
"unpriced", never $0), a wall time from ``--max-workers`` and the assumed latencies below, and
the minimum detectable effect of the paired test on the test split
(:mod:`reflex.checks.power`). The assumptions are constants here, named in docs/budgets.md:

* A candidate costs its ``batch_size`` train screen and one val pass (every val row, each task
  model), as :mod:`reflex.run.presets` sizes budgets; the search measures ``max_iterations``
  candidates (as the engine resolves it), or fewer when the call budget runs out first.
* A task call's input is the starting prompt and the row's input; its output is as long as
  the row's reference answer (``--max-tokens``, else 100 tokens, for rows without one). A
  candidate that adds demos is longer than the starting prompt: the search's tokens are a floor.
* A reasoning strategy asks the reasoning model once per candidate (``auto`` with a reasoning
  model: for a third of them), with the prompt, a minibatch of rows and answers, and gets a
  prompt back; a judge metric judges each task answer once.
* Wall time: each evaluation runs its rows ``max_workers`` at a time, 1 s per task call (and
  1 s more per judged row), 10 s per reasoning call, one after another.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from reflex.models.tokens import TOKENIZER
from reflex.models.usage import cost_text
from reflex.run.budget import figure

__all__ = ["PhaseCost", "PricedPlan", "plan_lines"]

BINARY_METRICS = frozenset({"exact_match", "contains", "regex", "numeric"})
TASK_SECONDS, JUDGE_SECONDS, REASONING_SECONDS = 1.0, 1.0, 10.0
OUTPUT_TOKENS = 100  # a row without a reference answer, and no --max-tokens
REASONING_TEMPLATE_TOKENS, REASONING_EXTRA_OUTPUT = 500, 300
JUDGE_RUBRIC_TOKENS, JUDGE_OUTPUT_TOKENS = 300, 50
BROKEN_PER_FIXED = 0.25  # the second, less favourable, binary assumption
CONTINUOUS_SD = 0.25  # assumed standard deviation of per-row differences (continuous scores)
SAMPLE_ROWS = 500  # rows whose tokens are counted for the per-row averages


@dataclass(frozen=True)
class PhaseCost:
    """One phase of the plan: its calls by role, tokens, cost of the priced calls (and how many
    calls went to a model with no price) and seconds."""

    phase: str
    calls: int
    input_tokens: int
    output_tokens: int
    reasoning_calls: int = 0
    judge_calls: int = 0
    cost: float = 0.0
    unpriced_calls: int = 0
    seconds: float = 0.0
    estimate: bool = False  # True: the search's figures depend on what the run finds


@dataclass(frozen=True)
class PricedPlan:
    """What a run would do and cost, before any call; ``lines()`` prints it, ``to_dict()``."""

    dataset: str
    rows: dict[str, int]
    prompt_tokens: int
    models: tuple[str, ...]
    strategy: str
    candidates: int
    budget: dict[str, Any]
    phases: tuple[PhaseCost, ...]
    cost: float  # of the priced calls; ``unpriced`` names the models with no price
    unpriced: tuple[str, ...]
    seconds: float
    max_workers: int
    power: dict[str, Any]
    notes: tuple[str, ...] = field(default=())

    @property
    def calls(self) -> int:
        """Task calls of every phase (what ``--max-calls`` counts)."""
        return sum(p.calls for p in self.phases)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["calls"] = self.calls
        data["assumptions"] = {
            "tokenizer": TOKENIZER,
            "seconds_per_task_call": TASK_SECONDS,
            "seconds_per_judge_call": JUDGE_SECONDS,
            "seconds_per_reasoning_call": REASONING_SECONDS,
        }
        return data

    def lines(self) -> list[str]:
        """The plan as text: the data, the budget, a table of the phases, cost, time, power."""
        return plan_lines(self)


def plan_lines(plan: PricedPlan) -> list[str]:
    """:meth:`PricedPlan.lines`: what ``--dry-run`` prints."""
    rows = plan.rows
    out = [
        "dry run: no model was called and nothing was written",
        f"data      {plan.dataset}: train {rows['train']}, val {rows['val']}, test "
        f"{rows['test']} rows; task model(s) {', '.join(plan.models)}",
        f"prompt    {plan.prompt_tokens:,} tokens ({TOKENIZER}), sent with every task call",
        f"strategy  {plan.strategy}: up to {plan.candidates} candidates",
        f"budget    {_budget_text(plan.budget)}",
        f"{'phase':<10} {'task calls':>10} {'tokens in':>11} {'tokens out':>10} "
        f"{'reasoning':>9} {'judge':>6} {'cost':>11} {'time':>7}",
    ]
    for p in plan.phases:
        calls = ("~" if p.estimate else "") + f"{p.calls:,}"
        out.append(
            f"{p.phase:<10} {calls:>10} {p.input_tokens:>11,} {p.output_tokens:>10,} "
            f"{p.reasoning_calls:>9,} {p.judge_calls:>6,} {_cost(p):>11} "
            f"{_duration(p.seconds):>7}"
        )
    out.append(f"{'total':<10} {plan.calls:>10,}")
    out.append(f"cost      {_cost_line(plan)}")
    out.append(
        f"time      about {_duration(plan.seconds)} with {plan.max_workers} call(s) at once "
        f"(assumes {TASK_SECONDS:g} s a task call, {REASONING_SECONDS:g} s a reasoning call; "
        "~ marks figures that depend on what the search finds)"
    )
    out.append(f"power     {_power_text(plan.power)}")
    out += [f"note      {note}" for note in plan.notes]
    return out


def _budget_text(budget: dict[str, Any]) -> str:
    calls = budget.get("max_calls")
    text = f"--max-calls {calls}" if calls is not None else "no call limit"
    if "preset_formula" in budget:
        formula = budget["preset_formula"]
        if budget.get("overridden"):
            text += f" (given: it wins over the preset's {formula})"
        else:
            text += f" (preset: {formula}; docs/budgets.md)"
    others = [f"{k}={v}" for k, v in budget.items() if k in ("max_cost", "max_seconds")]
    return text + (f"; {', '.join(others)}" if others else "")


def _cost(phase: PhaseCost) -> str:
    if phase.unpriced_calls and not phase.cost:
        return "unpriced"
    return f"${figure(phase.cost, 4)}" + ("+?" if phase.unpriced_calls else "")


def _cost_line(plan: PricedPlan) -> str:
    unpriced = sum(p.unpriced_calls for p in plan.phases)
    if not unpriced:
        return f"${figure(plan.cost, 4)} (LiteLLM's price table; --price first)"
    total = sum(p.calls + p.reasoning_calls + p.judge_calls for p in plan.phases)
    text = cost_text(plan.cost, total, unpriced)
    return (
        f"{text}: {', '.join(plan.unpriced)} has no price in LiteLLM's table (give one with "
        "--price MODEL=IN:OUT)"
    )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _power_text(power: dict[str, Any]) -> str:
    head = (
        f"on {power['rows']} test rows the paired test (sign-flip, alpha {power['alpha']}) "
        f"finds with {power['power']:.0%} power only a gain of"
    )
    if power["scores"] == "binary":
        best, worse = power["no_row_worse"], power["with_broken_rows"]
        return (
            f"{head} {_gain(best)} or more if no row gets worse, {_gain(worse)} if one row "
            "breaks for every four fixed (0/1 scores)"
        )
    return (
        f"{head} {_gain(power['effect'])} or more if the per-row differences have a "
        f"standard deviation of {power['sd']} (continuous scores)"
    )


def _gain(value: float | None) -> str:
    return "none (too few rows)" if value is None else f"+{value:.3f}"
