"""Estimating a run's plan before any call: what :class:`reflex.run.plan.PricedPlan` holds.

Counted or looked up, never asked of a model; the assumptions are the constants of
:mod:`reflex.run.plan` (docs/budgets.md says each).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from reflex.checks.power import mde_binary, mde_continuous
from reflex.config import RunConfig
from reflex.models.client import load_litellm
from reflex.models.preflight import judge_specs
from reflex.models.pricing import token_prices
from reflex.models.providers import is_serial
from reflex.models.tokens import count_tokens
from reflex.run.engine import Engine
from reflex.run.plan import (
    BINARY_METRICS,
    BROKEN_PER_FIXED,
    CONTINUOUS_SD,
    JUDGE_OUTPUT_TOKENS,
    JUDGE_RUBRIC_TOKENS,
    JUDGE_SECONDS,
    OUTPUT_TOKENS,
    REASONING_EXTRA_OUTPUT,
    REASONING_SECONDS,
    REASONING_TEMPLATE_TOKENS,
    SAMPLE_ROWS,
    TASK_SECONDS,
    PhaseCost,
    PricedPlan,
)
from reflex.run.presets import (
    PREFLIGHT_ROWS,
    MiproRound,
    candidate_calls,
    fixed_calls,
    mipro_round,
    sampling_calls,
)

__all__ = ["price_plan"]


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

    def _price(self, model: str) -> tuple[float, float] | None:
        """``--price``'s (given per million) when set, else LiteLLM's table."""
        if model in self._overrides:
            given, taken = self._overrides[model]
            return given / 1e6, taken / 1e6
        return token_prices(load_litellm(), model)

    def cost(
        self, model: str, calls: int, input_tokens: float, output_tokens: float
    ) -> tuple[float, int]:
        """``(cost, unpriced calls)`` of ``calls`` calls of ``model``."""
        if calls <= 0:
            return 0.0, 0
        if model not in self._known:
            self._known[model] = self._price(model)
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
    rounds = _mipro_round(config, sizes)
    if rounds is not None:
        return _mipro_search(engine, phases, sizes, rounds)
    per_candidate = candidate_calls(models, val=sizes["val"], batch_size=config.batch_size)
    sampled = sampling_calls(
        config.strategy, config.strategy_options, models=models, batch_size=config.batch_size
    )
    per_candidate += sampled
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
        "search",
        [screen, val, sampled] if sampled else [screen, val],
        repeat=candidates,
        reasoning=reasoning,
        estimate=True,
    )
    return search, candidates


def _mipro_round(config: RunConfig, sizes: dict[str, int]) -> MiproRound | None:
    """``mipro``'s round for these split sizes (raced under ``--race`` with a val split)."""
    raced = config.race and sizes["val"] > 0
    options = config.strategy_options
    return mipro_round(config.strategy, options, val=_selection_rows(sizes), raced=raced)


def _selection_rows(sizes: dict[str, int]) -> int:
    """The rows a candidate is selected on: val, or train without a val split."""
    return sizes["val"] or sizes["train"]


def _mipro_search(
    engine: Engine, phases: _Phases, sizes: dict[str, int], rounds: MiproRound
) -> tuple[PhaseCost, int]:
    """``mipro``'s search: its rounds (trials on minibatches, then full evaluations) and the
    candidates measured on full val; the call budget's rounds when fewer."""
    models = len(engine.config.models)
    count = engine.planned_iterations() // rounds.iterations
    limit = engine.limits.max_calls
    if limit is not None:
        room = max(0, limit - fixed_calls(models, **sizes))
        count = min(count, room // max(1, rounds.calls(models)))
    trial = models * rounds.rows
    if rounds.raced:  # the finalists' race, planned at half a val pass each
        evaluations = [trial] * rounds.trials + [rounds.calls(models) - trial * rounds.trials]
    else:
        evaluations = [trial] * rounds.trials + [models * rounds.val] * rounds.full
    options = engine.config.strategy_options
    asks = options.get("use_reasoning_model", True) is not False
    writes = options.get("proposed_instructions", 1) != 0
    reasoning = 1 if engine.config.reasoning_model and asks and writes else 0  # instructions
    search = phases.phase("search", evaluations, repeat=count, reasoning=reasoning, estimate=True)
    return search, count * rounds.full


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
        strategy=_strategy(config.strategy, config.strategy_options.get("steps")),
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


def _strategy(name: str, steps: object) -> str:
    """``sequence (instructions -> fewshot)`` for a sequence, else the strategy's name."""
    if name == "sequence" and isinstance(steps, list):
        return f"{name} ({' -> '.join(str(s) for s in steps)})"
    return name


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
    rounds = _mipro_round(config, sizes)
    if rounds is not None:
        notes.append(
            f"mipro: rounds of {rounds.trials} TPE trials on {rounds.rows} val rows each, then "
            f"the best {rounds.full} by mean "
            + ("raced on growing rungs of " if rounds.raced else "on ")
            + f"all {rounds.val} val rows (only those can win); "
            "rows answered before are cached, so the search often pays less"
        )
    return notes
