"""The CI gate behind ``aevyra-reflex check``: score a prompt and compare it with a baseline.

The baseline is a number, or a run record (a run folder, its result.json or a run id). A record
fixes the rows (its split's ids from ``splits.json``), the metrics and the decoding settings, so
the current prompt is measured exactly as the record's final prompt was. Evaluation goes
through the engine's own path (:class:`~reflex.models.client.ProviderClient` and
:class:`~reflex.run.evaluate.Evaluator`), so its numbers are the optimizer's numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from reflex.checks.confusion import label_set
from reflex.checks.stats import PairedTest, paired_test
from reflex.checks.trivial import label_warnings, snapshot_check
from reflex.config import RunConfig
from reflex.data.dataset import Dataset
from reflex.errors import ConfigurationError, ReflexError
from reflex.models.client import ClientSettings, ModelSpec, ProviderClient
from reflex.models.preflight import check_models, judge_specs
from reflex.models.router import ModelRouter
from reflex.models.runner import LoopRunner
from reflex.models.shared_cache import open_cache
from reflex.redact import REDACTED
from reflex.result import EvalSnapshot, best_val_of
from reflex.run.evaluate import Evaluator, request_for, task_spec
from reflex.run.records import RUN_DIR, read_json, resolve_run
from reflex.types import Example, Metric

__all__ = [
    "Baseline",
    "CheckOutcome",
    "build_evaluator",
    "compare",
    "evaluate_prompt",
    "load_baseline",
    "paid_calls",
    "point_judges",
    "rebuild_metrics",
    "record_config",
    "rows_for",
    "run_evaluation",
    "supplied_judge",
]


@dataclass(frozen=True)
class Baseline:
    """What the current prompt must not fall below.

    ``config`` is the record's run configuration (None for a plain number); ``ids`` the rows to
    measure on (None: the whole dataset); ``per_example`` the record's per-row scores, for a
    paired test.
    """

    score: float
    source: str
    split: str | None = None
    ids: list[str] | None = None
    config: dict[str, Any] | None = None
    per_example: dict[str, float] = field(default_factory=dict)


def _as_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def load_baseline(ref: str, split: str | None, run_dir: str | Path = RUN_DIR) -> Baseline:
    """A baseline from a score (``"0.82"``) or a run record; ConfigurationError when unusable."""
    number = _as_number(ref)
    if number is not None:
        if not 0.0 <= number <= 1.0:
            raise ConfigurationError(f"--baseline {ref}: a score must be between 0 and 1")
        return Baseline(score=number, source=f"score {ref}", split=split)
    path = resolve_run(ref, run_dir)
    result = read_json(path / "result.json")
    splits = read_json(path / "splits.json")
    config = read_json(path / "config.json")
    split = split or "test"
    if split == "test":
        final = result.get("final") or {}
        if "mean_score" not in final:
            raise ConfigurationError(f"run {path.name} has no final test score (did it finish?)")
        per = {f"{s['example_id']}@{s['model']}": s["score"] for s in final.get("samples", [])}
        score = float(final["mean_score"])
        per = {k: float(v) for k, v in per.items() if v is not None}
    elif split == "val" and splits.get("val") and best_val_of(result) is not None:
        score, per = float(best_val_of(result) or 0.0), {}
    else:
        raise ConfigurationError(
            f"run {path.name} records no {split} score of its best prompt: use --split test "
            "(the final test score) or --split val (the best val score)"
        )
    return Baseline(
        score=score,
        source=f"run {path.name} ({split})",
        split=split,
        ids=[str(i) for i in splits.get(split, [])],
        config=config,
        per_example=per,
    )


def rows_for(dataset: Dataset, baseline: Baseline) -> list[Example]:
    """The rows to score: the record's split ids, or the dataset (or its own ``split`` rows)."""
    if baseline.ids is not None:
        missing = [i for i in baseline.ids if i not in set(dataset.ids)]
        if missing:
            raise ConfigurationError(
                f"{len(missing)} {baseline.split} row(s) of {baseline.source} are not in the "
                f"dataset (e.g. {missing[:3]}): pass the run's dataset, or a score as --baseline"
            )
        return [dataset.by_id(i) for i in baseline.ids]
    if baseline.split is None:
        return list(dataset)
    rows = [e for e in dataset if e.split == baseline.split]
    if not rows:
        raise ConfigurationError(
            f"--split {baseline.split}: no rows of the dataset have split={baseline.split!r}; "
            "drop --split to score the whole dataset"
        )
    return rows


JUDGE_HINT = "pass --judge PROVIDER/MODEL (and --judge-criteria FILE) as the run used them"


def rebuild_metrics(
    config: RunConfig, supplied: Sequence[Metric] = (), source: str = "the run"
) -> list[Metric]:
    """The metrics of ``config.metrics``, rebuilt as the run built them.

    A metric with a stored spec (``config.metric_specs``) is rebuilt from its options; one
    without is taken from ``supplied`` (e.g. ``--judge``), else rebuilt by name. A metric that
    cannot be rebuilt is a one-line ConfigurationError saying what to pass.
    """
    from reflex.plugins import get_registry

    registry = get_registry()
    stored: dict[str, Metric] = {}
    for spec in config.metric_specs:
        try:
            metric = registry.metric(spec.name, **spec.options)
        except ReflexError as exc:
            raise ConfigurationError(
                f"cannot rebuild metric {spec.name!r} of {source} from its config.json: {exc}"
            ) from None
        stored[metric.name] = metric
    given = {m.name: m for m in supplied}
    for name in given:
        if name in stored:
            raise ConfigurationError(
                f"{source} records its own {name} (model, rubric): drop --judge"
            )
        if name not in config.metrics:
            raise ConfigurationError(f"{source} does not score with {name}: drop --judge")
    return [stored.get(n) or given.get(n) or _by_name(n, source) for n in config.metrics]


def supplied_judge(
    model: str | None, criteria: str | Path | None, api_base: str | None = None
) -> list[Metric]:
    """The judge given as ``--judge``/``--judge-criteria``/``--judge-api-base`` (for records
    that lack one)."""
    if model is None:
        if criteria is not None:
            raise ConfigurationError("--judge-criteria needs --judge PROVIDER/MODEL")
        return []
    from reflex.judging.judge import LLMJudge

    return [LLMJudge(model, criteria=criteria, api_base=api_base)]


def point_judges(metrics: Sequence[Metric], api_base: str | None) -> list[Metric]:
    """``metrics`` with every judge's calls sent to ``api_base`` (``--judge-api-base``).

    A record's judge is rebuilt with the URL its config.json stored, redacted (or none: the
    provider's default host), so a self-hosted judge needs the URL again. Without a judge among
    ``metrics`` the flag would do nothing, and without the flag a judge whose stored URL was
    redacted would call a broken one: a ConfigurationError says so.
    """
    if api_base is None:
        redacted = [
            spec.model for spec in judge_specs(metrics) if REDACTED in (spec.api_base or "")
        ]
        if redacted:
            raise ConfigurationError(
                f"the judge {redacted[0]}'s URL held credentials and was stored redacted: pass "
                "--judge-api-base URL"
            )
        return list(metrics)
    pointed = 0
    for metric in metrics:
        spec = getattr(metric, "judge", None)  # what judge_specs reads: an LLMJudge's model
        if isinstance(spec, ModelSpec):
            setattr(metric, "judge", replace(spec, api_base=api_base))  # noqa: B010
            pointed += 1
    if not pointed:
        raise ConfigurationError(
            "--judge-api-base: no judge to send it to (the metrics have no LLM judge); pass "
            "--judge PROVIDER/MODEL, or drop --judge-api-base"
        )
    return list(metrics)


def _by_name(name: str, source: str) -> Metric:
    from reflex.plugins import get_registry

    try:
        return get_registry().metric(name)
    except ConfigurationError:
        hint = (
            JUDGE_HINT
            if name == "llm_judge"
            else "the metric needs options it does not record (see ConfigurableMetric in "
            "reflex.config)"
        )
        raise ConfigurationError(
            f"{source} records metric {name!r} without its options (its config.json has no "
            f"metric_specs entry for it), so it cannot be rebuilt: {hint}"
        ) from None


def record_config(stored: Mapping[str, object], api_base: str | None) -> RunConfig:
    """A record's config.json as a RunConfig; ``api_base`` replaces its endpoint, which must be
    given when the stored one held credentials (it was stored redacted)."""
    stored_base = stored.get("api_base")
    if api_base is None and stored_base and REDACTED in str(stored_base):
        raise ConfigurationError(
            "the run's --api-base held credentials and was stored redacted: pass --api-base URL"
        )
    return RunConfig.model_validate({**stored, "api_base": api_base or stored_base})


def build_evaluator(
    config: RunConfig,
    metrics: Sequence[Metric],
    cache: Path | None = None,
    *,
    read_only: bool = False,
) -> Evaluator:
    """An Evaluator wired like a run's (client, cache namespace, decoding settings, weights).

    ``cache``: a response cache file (e.g. a run directory's ``cache.sqlite``): answers already
    there cost nothing, new ones are added to it. A run made with ``--cache-url`` (or a Router
    config) reads that shared cache (and routes through that Router) instead.
    """
    specs = [task_spec(config, m) for m in config.models]
    check_models([*specs, *judge_specs(metrics)], config.router_config)  # before any call
    client = ProviderClient(
        ClientSettings(
            max_workers=config.max_workers,
            processes=config.client_processes,
            local_workers=config.local_workers,
            local_batch=config.local_batch,
            cache_namespace=config.cache_namespace,
            seed=config.seed,
            max_response_mb=config.max_response_mb,
        ),
        cache=open_cache(config.cache_url, cache, read_only=read_only) if cache else None,
        router=ModelRouter(config.router_config) if config.router_config else None,
    )
    return Evaluator(
        client=client,
        models=specs,
        metrics=metrics,
        weights=config.metric_weights,
        prompt_mode=config.prompt_mode,
    )


def paid_calls(evaluator: Evaluator, prompt: str, examples: Sequence[Example]) -> int:
    """How many task-model calls evaluating ``prompt`` would pay for (cache misses)."""
    return sum(
        evaluator.client.would_pay(*request_for(spec, prompt, ex, evaluator.prompt_mode))
        for spec in evaluator.models
        for ex in examples
    )


def run_evaluation(
    evaluator: Evaluator, prompt: str, examples: Sequence[Example], label: str
) -> EvalSnapshot:
    """Evaluate on the shared loop, then close the evaluator's cache."""
    try:
        return LoopRunner.shared().run(evaluator.evaluate(prompt, list(examples), label))
    finally:
        if evaluator.client.cache is not None:
            evaluator.client.cache.close()


def evaluate_prompt(
    prompt: str,
    examples: Sequence[Example],
    config: RunConfig,
    metrics: Sequence[Metric],
    *,
    cache: Path | None = None,
) -> EvalSnapshot:
    """Score ``prompt`` on ``examples`` the way a run with ``config`` does (same client path)."""
    return run_evaluation(build_evaluator(config, metrics, cache), prompt, examples, "check")


@dataclass(frozen=True)
class CheckOutcome:
    """The gate's verdict. ``check``'s rule (``alpha`` None): ``regressed`` when current <
    baseline - tolerance or a row errored. ``promote``'s rule (``alpha`` set): only a
    *significant* drop beyond the tolerance (the paired test of the two on the same rows, two
    sided, p < alpha, the current side lower) or an errored row; a dip the test cannot tell from
    noise passes. Without a paired test (no shared rows) it falls back to check's rule."""

    baseline: Baseline
    current: EvalSnapshot
    tolerance: float
    test: PairedTest | None
    label_check: dict[str, Any] | None = None  # a label task: vs the constant answer
    alpha: float | None = None  # set: promote's rule (significant regressions only)

    @property
    def delta(self) -> float:
        return self.current.mean_score - self.baseline.score

    @property
    def regressed(self) -> bool:
        if self.current.n_errors > 0:
            return True
        dropped = self.delta < -self.tolerance
        if self.alpha is None or self.test is None:
            return dropped
        return dropped and self.test.significant and self.test.mean_diff < 0

    def rule(self) -> str:
        """What the verdict compares, and with which threshold, in one line."""
        n = len(self.current.samples)
        beyond = f"below the baseline by more than {self.tolerance:.4f}"
        if self.alpha is None or self.test is None:
            return f"regression: the mean of these {n} rows {beyond}, or a row errored"
        return (
            f"regression: the mean of these {n} rows {beyond} and the paired test of the "
            f"{self.test.n} shared rows significant (p < {self.alpha:g}), or a row errored"
        )

    def lines(self) -> list[str]:
        n = len(self.current.samples)
        out = [
            f"baseline  {self.baseline.score:.4f}  ({self.baseline.source})",
            f"current   {self.current.mean_score:.4f}  ({n} rows)",
            f"change    {self.delta:+.4f}  (tolerance {self.tolerance:.4f})",
        ]
        out += [f"  {k}: {v:.4f}" for k, v in sorted(self.current.scores_by_metric.items())]
        if self.test is not None:
            out.append(f"paired    {self.test.summary()}")
        for warning in label_warnings(self.label_check, "these", "the prompt"):
            out.append(f"warning   {warning['kind']}: {warning['message']}")
        if self.current.n_errors:
            out.append(f"errors    {self.current.n_errors} row(s) errored (a failing row fails)")
        if self.alpha is not None:
            out.append(f"rule      {self.rule()}")
        verdict = "REGRESSION" if self.regressed else "ok"
        out.append(f"verdict   {verdict}")
        return out


def compare(
    baseline: Baseline,
    current: EvalSnapshot,
    tolerance: float,
    examples: Sequence[Example] = (),
    *,
    alpha: float | None = None,
) -> CheckOutcome:
    """Compare; a paired test when the record has per-row scores of the same rows. On a label
    task (``examples``' references), the prompt's answers against the constant answer too.
    ``alpha``: decide by promote's rule (a significant regression at that level, see
    :class:`CheckOutcome`) instead of check's."""
    test = None
    now = current.per_example()
    if baseline.per_example and set(baseline.per_example) & set(now):
        test = paired_test(baseline.per_example, now, alpha=alpha or 0.05)
    labels = label_set(e.ideal for e in examples)
    check = None
    if labels:
        check = snapshot_check({e.id: e.ideal for e in examples}, labels, current.samples)
    return CheckOutcome(baseline, current, tolerance, test, check, alpha)
