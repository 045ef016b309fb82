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

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from reflex.checks.power import mde_binary, mde_continuous
from reflex.models.preflight import judge_specs
from reflex.models.pricing import token_prices
from reflex.models.providers import is_serial
from reflex.models.tokens import TOKENIZER, count_tokens
from reflex.models.usage import cost_text
from reflex.run.engine import Engine
from reflex.run.presets import PREFLIGHT_ROWS, candidate_calls, fixed_calls

__all__ = ["PhaseCost", "PricedPlan", "price_plan"]

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
        return _lines(self)


@dataclass(frozen=True)
class _Rows:
    """Per task call: input tokens (prompt + row) and output tokens; per row: its parts."""

    prompt: int
    row_input: float
    row_output: float

    @property
    def task_input(self) -> float:
        return self.prompt + self.row_input


def _row_tokens(rows: Sequence[Any], prompt: str, max_tokens: int | None) -> _Rows:
    sample = list(rows)[:SAMPLE_ROWS]
    if not sample:
        return _Rows(count_tokens(prompt), 0.0, float(max_tokens or OUTPUT_TOKENS))
    inputs = [count_tokens(e.input) for e in sample]
    fallback = max_tokens or OUTPUT_TOKENS
    outputs = [count_tokens(e.ideal) if e.ideal else fallback for e in sample]
    if max_tokens is not None:
        outputs = [min(n, max_tokens) for n in outputs]
    return _Rows(count_tokens(prompt), sum(inputs) / len(sample), sum(outputs) / len(sample))


class _Prices:
    """Each model's price per token, looked up once; the unpriced ones remembered."""

    def __init__(self, overrides: dict[str, tuple[float, float]]) -> None:
        self._overrides = overrides
        self._known: dict[str, tuple[float, float] | None] = {}
        self.unpriced: list[str] = []

    def cost(
        self, model: str, calls: int, input_tokens: float, output_tokens: float
    ) -> tuple[float, int]:
        """``(cost, unpriced calls)`` of ``calls`` calls of ``model``."""
        if calls <= 0:
            return 0.0, 0
        if model not in self._known:
            self._known[model] = token_prices(model, self._overrides)
        pair = self._known[model]
        if pair is None:
            if model not in self.unpriced:
                self.unpriced.append(model)
            return 0.0, calls
        return calls * (input_tokens * pair[0] + output_tokens * pair[1]), 0


def _reasoning_share(engine: Engine) -> float:
    """Reasoning calls per candidate: 1 for a reasoning strategy, a third for ``auto`` with a
    reasoning model, a sequence's share of reasoning steps; 0 without a reasoning model."""
    config = engine.config
    if not config.reasoning_model:
        return 0.0
    if engine.strategy_cls.requires_reasoning_model:
        return 1.0
    if config.strategy == "auto":
        return 0.0 if config.strategy_options.get("use_reasoning_model") is False else 1 / 3
    steps = config.strategy_options.get("steps")
    if config.strategy == "sequence" and isinstance(steps, list) and steps:
        from reflex.plugins import get_registry

        registry = get_registry()
        needs = [registry.strategy(str(s)).requires_reasoning_model for s in steps]
        return sum(needs) / len(needs)
    return 0.0


def _evaluations_seconds(sizes: Iterable[int], workers: int, per_row: float) -> float:
    return sum(math.ceil(n / workers) * per_row for n in sizes if n > 0)


class _Phases:
    """Builds each phase's :class:`PhaseCost` from the calls of every role."""

    def __init__(self, engine: Engine, rows: _Rows) -> None:
        config = engine.config
        self.models = tuple(config.models)
        self.rows = rows
        self.prices = _Prices(dict(config.prices))
        judges = judge_specs(engine.metrics)
        self.judge = judges[0].model if judges else None
        self.reasoning = config.reasoning_model
        # The embedded model answers one call at a time, whatever --max-workers says.
        serial = all(is_serial(m.partition("/")[0]) for m in config.models)
        self.workers = 1 if serial else config.max_workers
        self.batch = config.batch_size
        self.per_row = TASK_SECONDS + (JUDGE_SECONDS if self.judge else 0.0)

    def phase(
        self,
        name: str,
        evaluations: Sequence[int],
        *,
        repeat: int = 1,
        reasoning: int = 0,
        estimate: bool = False,
    ) -> PhaseCost:
        """``evaluations``: the task calls of each evaluation (rows x models), ``repeat`` times."""
        calls = sum(evaluations) * repeat
        rows = self.rows
        priced = [
            self.prices.cost(m, calls // len(self.models), rows.task_input, rows.row_output)
            for m in self.models
        ]
        judged = calls if self.judge else 0
        if self.judge:
            judge_in = rows.row_input + 2 * rows.row_output + JUDGE_RUBRIC_TOKENS
            priced.append(self.prices.cost(self.judge, judged, judge_in, JUDGE_OUTPUT_TOKENS))
        if reasoning and self.reasoning:
            shown = self.batch * (rows.row_input + 2 * rows.row_output)
            reason_in = rows.prompt + shown + REASONING_TEMPLATE_TOKENS
            reason_out = rows.prompt + REASONING_EXTRA_OUTPUT
            priced.append(self.prices.cost(self.reasoning, reasoning, reason_in, reason_out))
        seconds = _evaluations_seconds(evaluations, self.workers, self.per_row) * repeat
        return PhaseCost(
            phase=name,
            calls=calls,
            input_tokens=round(calls * rows.task_input),
            output_tokens=round(calls * rows.row_output),
            reasoning_calls=reasoning,
            judge_calls=judged,
            cost=sum(c for c, _ in priced),
            unpriced_calls=sum(n for _, n in priced),
            seconds=seconds + reasoning * REASONING_SECONDS,
            estimate=estimate,
        )


def _search(engine: Engine, phases: _Phases, sizes: dict[str, int]) -> tuple[PhaseCost, int]:
    """The search phase and the candidates it measures: the iterations, or what the call
    budget left after the fixed calls pays for when fewer."""
    models, config = len(engine.config.models), engine.config
    per_candidate = candidate_calls(models, val=sizes["val"], batch_size=config.batch_size)
    candidates = engine.planned_iterations()
    limit = engine.limits.max_calls
    if limit is not None:
        room = max(0, limit - fixed_calls(models, **sizes))
        candidates = min(candidates, room // per_candidate)
    reasoning = math.ceil(candidates * _reasoning_share(engine))
    if config.budget.max_reasoning_calls is not None:
        reasoning = min(reasoning, config.budget.max_reasoning_calls)
    screen = models * min(config.batch_size, sizes["train"])
    val = models * sizes["val"]
    search = phases.phase(
        "search", [screen, val], repeat=candidates, reasoning=reasoning, estimate=True
    )
    return search, candidates


def _power(engine: Engine, test_rows: int) -> dict[str, Any]:
    """The minimum detectable effect of the paired test on the test split (80% power)."""
    config = engine.config
    weighted = [m.name for m in engine.metrics if config.metric_weights.get(m.name, 1.0) > 0]
    binary = len(weighted) == 1 and weighted[0] in BINARY_METRICS
    n = test_rows * len(config.models)
    found: dict[str, Any] = {
        "rows": n,
        "alpha": 0.05,
        "power": 0.8,
        "test": "paired sign-flip, two-sided",
        "metrics": weighted,
        "scores": "binary" if binary else "continuous",
    }
    if binary:
        found["no_row_worse"] = mde_binary(n)
        found["broken_per_fixed"] = BROKEN_PER_FIXED
        found["with_broken_rows"] = mde_binary(n, broken_per_fixed=BROKEN_PER_FIXED)
    else:
        effect = mde_continuous(n, CONTINUOUS_SD)
        found["sd"] = CONTINUOUS_SD
        found["effect"] = effect if effect <= 1.0 else None
    return found


def price_plan(engine: Engine, prompt: str) -> PricedPlan:
    """The plan of the run ``engine`` was built for (every check before a call already made)."""
    config, split = engine.config, engine.split
    sizes = {"train": len(split.train), "val": len(split.val), "test": len(split.test)}
    models = len(config.models)
    rows = _row_tokens(list(engine.dataset), prompt, config.max_tokens)
    phases = _Phases(engine, rows)
    preflight = phases.phase("preflight", [models * min(PREFLIGHT_ROWS, sizes["train"])])
    baselines = phases.phase("baselines", [models * sizes["test"], models * sizes["val"]])
    search, candidates = _search(engine, phases, sizes)
    final = phases.phase("final", [models * sizes["test"]])
    parts = (preflight, baselines, search, final)
    return PricedPlan(
        dataset=engine.dataset.name,
        rows=sizes,
        prompt_tokens=rows.prompt,
        models=tuple(config.models),
        strategy=config.strategy,
        candidates=candidates,
        budget=_budget(engine),
        phases=parts,
        cost=sum(p.cost for p in parts),
        unpriced=tuple(phases.prices.unpriced),
        seconds=sum(p.seconds for p in parts),
        max_workers=phases.workers,
        power=_power(engine, sizes["test"]),
        notes=tuple(_notes(engine, sizes)),
    )


def _budget(engine: Engine) -> dict[str, Any]:
    limits, preset = engine.limits, engine.preset
    found: dict[str, Any] = {k: v for k, v in limits.model_dump().items() if v is not None}
    if preset is not None:
        found["preset_calls"] = preset.calls
        found["preset_formula"] = preset.formula()
        found["overridden"] = engine.config.budget.max_calls is not None
    return found


def _notes(engine: Engine, sizes: dict[str, int]) -> list[str]:
    config, notes = engine.config, []
    models = len(config.models)
    fixed = fixed_calls(models, **sizes)
    limit = engine.limits.max_calls
    if limit is not None and limit < fixed:
        notes.append(
            f"--max-calls {limit} is below the {fixed} calls every run pays (preflight, "
            "baselines, final): the search gets no candidate"
        )
    if engine.pipeline is not None:
        notes.append("a pipeline makes its own calls: the figures count one task call per row")
    if not sizes["val"]:
        notes.append("no val split: candidates are selected on a train minibatch")
    return notes


def _lines(plan: PricedPlan) -> list[str]:
    rows = plan.rows
    out = [
        "dry run: no model was called and nothing was written",
        f"data      {plan.dataset}: train {rows['train']}, val {rows['val']}, test "
        f"{rows['test']} rows; task model(s) {', '.join(plan.models)}",
        f"prompt    {plan.prompt_tokens:,} tokens ({TOKENIZER}), sent with every task call",
        f"strategy  {plan.strategy}: up to {plan.candidates} candidates",
        f"budget    {_budget_text(plan.budget)}",
        f"{'phase':<10} {'task calls':>10} {'tokens in':>11} {'tokens out':>10} "
        f"{'reasoning':>9} {'judge':>6} {'cost':>10} {'time':>7}",
    ]
    for p in plan.phases:
        calls = ("~" if p.estimate else "") + f"{p.calls:,}"
        out.append(
            f"{p.phase:<10} {calls:>10} {p.input_tokens:>11,} {p.output_tokens:>10,} "
            f"{p.reasoning_calls:>9,} {p.judge_calls:>6,} {_cost(p):>10} "
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
    return f"${phase.cost:.4f}" + ("+?" if phase.unpriced_calls else "")


def _cost_line(plan: PricedPlan) -> str:
    unpriced = sum(p.unpriced_calls for p in plan.phases)
    if not unpriced:
        return f"${plan.cost:.4f} (LiteLLM's price table; --price first)"
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
