"""Compare strategies head to head: each strategy x seed x dataset at one metric-call budget.

Every run gets its own run directory (so its own response cache): a strategy never rides on
calls another one paid for, and each is charged the same way. The seed also sets the split, so
for one seed and dataset every strategy is measured on the same test rows. Each dataset is
summarized on its own: its best strategy, and per strategy the paired sign-flip test of its
final per-example test scores against that best, paired by (seed, example, model) within the
dataset, never across datasets.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import fmean, stdev
from typing import TYPE_CHECKING, Any, TypeAlias

from reflex.checks.stats import sign_flip_p
from reflex.errors import ConfigurationError
from reflex.grid.executors import Cell, Executor, run_cells

if TYPE_CHECKING:
    from reflex.callbacks import AnyCallback
    from reflex.data.dataset import Dataset
    from reflex.data.prompts import PromptLike
    from reflex.optimizer import PromptOptimizer
    from reflex.result import OptimizationResult

# One dataset of a grid: what PromptOptimizer.set_dataset takes.
DatasetLike: TypeAlias = "Dataset | str | Path | Sequence[Mapping[str, Any]] | Any"

__all__ = ["DEFAULT_SEEDS", "Comparison", "RunSummary", "StrategySummary", "compare"]

# Seeds per strategy when none are given: compare()'s default and --seeds' (reflex.cli.compare).
DEFAULT_SEEDS = 3


@dataclass(frozen=True)
class RunSummary:
    """One strategy x seed run: its final test score, spend and where it is on disk."""

    strategy: str
    seed: int
    baseline: float | None
    final: float | None
    metric_calls: int
    tokens: int
    cost: float | None  # None: every paid call was unpriced
    stop_reason: str
    run_dir: str | None
    per_example: dict[str, float] = field(default_factory=dict, repr=False)
    dataset: str = "dataset"


@dataclass(frozen=True)
class StrategySummary:
    """Per strategy and dataset: mean and sd of the final test score over seeds, mean spend,
    and p vs that dataset's best strategy."""

    strategy: str
    n: int
    mean: float | None
    sd: float | None
    mean_calls: float
    mean_tokens: float
    mean_cost: float | None  # over the runs with a known cost; None when none had one
    p_vs_best: float | None
    is_best: bool
    dataset: str = "dataset"


@dataclass
class Comparison:
    """The outcome of :func:`compare`; ``save`` writes ``compare.json`` and ``compare.md``.

    ``strategies`` are grouped by dataset (in ``datasets`` order), best first within each.
    """

    strategies: list[StrategySummary]
    runs: list[RunSummary]
    seeds: list[int]
    max_calls: int | None
    directory: str = ""
    datasets: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seeds": self.seeds,
            "max_calls": self.max_calls,
            "datasets": self.datasets,
            "strategies": [asdict(s) for s in self.strategies],
            "runs": [asdict(r) for r in self.runs],
        }

    def best(self, dataset: str | None = None) -> StrategySummary:
        """The best strategy on ``dataset`` (default: the only or first dataset)."""
        first = self.strategies[0].dataset if self.strategies else ""
        name = first if dataset is None else dataset
        for summary in self.strategies:
            if summary.dataset == name and summary.is_best:
                return summary
        raise KeyError(f"no dataset {name!r} in this comparison ({', '.join(self.datasets)})")

    def table(self) -> str:
        """A markdown table, best strategy first; with several datasets, one block of rows per
        dataset (a ``dataset`` column; best and p within each dataset)."""
        several = len(self.datasets) > 1
        head = "| strategy | test mean | sd | calls | tokens | cost | p vs best |"
        lines = [("| dataset " if several else "") + head]
        lines.append("|---" * (8 if several else 7) + "|")
        for s in self.strategies:
            p = "best" if s.is_best else _fmt(s.p_vs_best)
            lines.append(
                (f"| {s.dataset} " if several else "")
                + f"| {s.strategy} | {_fmt(s.mean)} | {_fmt(s.sd)} | {s.mean_calls:.0f} | "
                f"{s.mean_tokens:.0f} | {_money(s.mean_cost)} | {p} |"
            )
        return "\n".join(lines)

    def save(self, directory: str | Path) -> Path:
        """Write ``compare.json`` and ``compare.md`` into ``directory``; returns the JSON path."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.json").write_text(
            json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8"
        )
        budget = f"{self.max_calls} metric calls" if self.max_calls else "no call limit"
        on = f", datasets {', '.join(self.datasets)}" if len(self.datasets) > 1 else ""
        title = f"# compare: seeds {self.seeds}, {budget}{on}\n\n"
        (out / "compare.md").write_text(title + self.table() + "\n", encoding="utf-8")
        return out / "compare.json"


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _summarize_run(cell: Cell, result: OptimizationResult) -> RunSummary:
    total = result.usage.get("total", {})
    final = result.final
    seed = cell.seed
    return RunSummary(
        strategy=cell.strategy,
        seed=seed,
        baseline=result.baseline.mean_score if result.baseline else None,
        final=final.mean_score if final else None,
        metric_calls=int(result.usage.get("metric_calls", 0)),
        tokens=int(total.get("tokens", 0)),
        cost=None if total.get("cost") is None else float(total["cost"]),
        stop_reason=result.stop_reason,
        run_dir=result.run_dir,
        per_example={f"{seed}:{k}": v for k, v in (final.per_example() if final else {}).items()},
        dataset=cell.dataset,
    )


def _paired_p(a: Mapping[str, float], b: Mapping[str, float], seed: int) -> float | None:
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    return sign_flip_p([a[k] - b[k] for k in shared], seed=seed)[0]


def summarize(runs: Sequence[RunSummary], strategies: Sequence[str]) -> list[StrategySummary]:
    """Per-dataset, per-strategy statistics: datasets in the order their runs come, and within
    each the best mean test score first (ties: the order given). Runs of different datasets are
    never pooled or paired."""
    out: list[StrategySummary] = []
    for dataset in dict.fromkeys(r.dataset for r in runs):
        out += _summarize_dataset([r for r in runs if r.dataset == dataset], strategies, dataset)
    return out


def _summarize_dataset(
    runs: Sequence[RunSummary], strategies: Sequence[str], dataset: str
) -> list[StrategySummary]:
    groups = {name: [r for r in runs if r.strategy == name] for name in strategies}
    means = {
        name: fmean(finals) if (finals := [r.final for r in rs if r.final is not None]) else None
        for name, rs in groups.items()
    }

    def rank(name: str) -> float:
        mean = means[name]
        return -mean if mean is not None else math.inf

    ranked = sorted(strategies, key=rank)
    best = ranked[0]
    pooled = {n: {k: v for r in groups[n] for k, v in r.per_example.items()} for n in strategies}
    out = []
    for name in ranked:
        rs = groups[name]
        finals = [r.final for r in rs if r.final is not None]
        out.append(
            StrategySummary(
                strategy=name,
                n=len(rs),
                mean=means[name],
                sd=stdev(finals) if len(finals) > 1 else None,
                mean_calls=fmean([r.metric_calls for r in rs]) if rs else 0.0,
                mean_tokens=fmean([r.tokens for r in rs]) if rs else 0.0,
                mean_cost=_mean_cost(rs),
                p_vs_best=None if name == best else _paired_p(pooled[name], pooled[best], 0),
                is_best=name == best,
                dataset=dataset,
            )
        )
    return out


def _mean_cost(runs: Sequence[RunSummary]) -> float | None:
    known = [r.cost for r in runs if r.cost is not None]
    return fmean(known) if known else None


def _money(cost: float | None) -> str:
    return "unpriced" if cost is None else f"${cost:.4f}"


def _grid_datasets(
    optimizer: PromptOptimizer, datasets: Sequence[DatasetLike] | None, prompt: PromptLike
) -> list[tuple[str, PromptOptimizer]]:
    """(label, builder with that dataset) per dataset of the grid, each validated up front (a
    bad dataset fails before any cell runs; a chat template's rows are bound to its variables
    as a run binds them). Labels are the datasets' names, made unique."""
    from reflex.run.prompt_sources import prompt_spec

    if isinstance(datasets, (str, Path)):
        datasets = [datasets]  # one file, not a sequence of characters
    builders = [optimizer.clone()] if datasets is None else []
    for data in datasets or ():
        builders.append(optimizer.clone().set_dataset(data))
    if not builders:
        raise ConfigurationError("compare needs at least one dataset, got datasets=[]")
    spec = prompt_spec(prompt)
    out: list[tuple[str, PromptOptimizer]] = []
    for builder in builders:
        builder.bind_template(spec)  # the run's own binding of a template's rows, before any cell
        name = label = builder.build_config().dataset_name or "dataset"
        taken = {t for t, _ in out}
        k = 1
        while label in taken:  # two files with one stem: data, data-2, ...
            k += 1
            label = f"{name}-{k}"
        out.append((label, builder))
    return out


def compare(
    optimizer: PromptOptimizer,
    prompt: PromptLike,
    strategies: Sequence[str],
    *,
    seeds: int | Sequence[int] = DEFAULT_SEEDS,
    max_calls: int | None = None,
    strategy_options: Mapping[str, Mapping[str, Any]] | None = None,
    callbacks: Sequence[AnyCallback] = (),
    directory: str | Path | None = None,
    executor: Executor = "local",
    ray_address: str | None = None,
    datasets: Sequence[DatasetLike] | None = None,
) -> Comparison:
    """Run each strategy for each seed (and dataset) at ``max_calls`` metric calls; summarize.

    ``optimizer`` is a configured builder (dataset, models, metrics, reasoning model); its
    strategy, seed and call budget are overridden per run. ``datasets``: the grid's datasets
    (anything ``set_dataset`` takes; pass :class:`~reflex.data.dataset.Dataset` objects to
    choose fields or names), each run with the same ``prompt``; default: the builder's own.
    Results are saved under ``directory`` (default: ``<run dir>/compare/<timestamp>``), with
    several datasets one sub-directory per dataset. ``executor="ray"`` runs the cells as tasks
    on the Ray cluster at ``ray_address`` (see :mod:`reflex.grid.executors`).
    """
    names = list(dict.fromkeys(strategies))
    if not names:
        raise ConfigurationError("compare needs at least one strategy (e.g. iterative,gepa)")
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    if not seed_list:
        raise ConfigurationError(f"compare needs at least one seed, got {seeds!r}")
    grid = _grid_datasets(optimizer, datasets, prompt)
    base_dir = Path(grid[0][1].build_config().run_dir)
    out = Path(directory) if directory else base_dir / "compare" / time.strftime("%Y%m%d-%H%M%S")
    options = strategy_options or {}
    cells = []
    for label, data_builder in grid:
        where = out / re.sub(r"[^\w.-]+", "_", label) if len(grid) > 1 else out
        for name in names:
            for seed in seed_list:
                run = data_builder.clone().set_strategy(name, **dict(options.get(name, {})))
                run.set_seed(seed).set_run_dir((where / f"{name}-seed{seed}").resolve())
                if max_calls is not None:  # other limits (cost, time) stay as the user set them
                    limits = run.build_config().budget.model_dump()
                    run.configure(budget={**limits, "max_calls": max_calls})
                cells.append(Cell(name, seed, run, label))
    runs: list[RunSummary] = run_cells(
        cells, prompt, callbacks, _summarize_run, executor=executor, address=ray_address
    )
    labels = [label for label, _ in grid]
    comparison = Comparison(summarize(runs, names), runs, seed_list, max_calls, str(out), labels)
    comparison.save(out)
    return comparison
