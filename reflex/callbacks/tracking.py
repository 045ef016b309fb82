"""Tracker-neutral helpers: what a tracker adapter logs (how it stays out of the run's way:
:mod:`reflex.callbacks.guarded`).

``reflex_mlflow`` and ``reflex_wandb`` (through :mod:`reflex.api.tracking`) use these, so an
MLflow run and a W&B run of the same optimization carry the same parameter keys, metric names and
summary values; a third-party tracker can do the same. Nothing here imports a tracker. Everything
that leaves the process goes through the core redactor (:mod:`reflex.redact`) first: no API key
or URL credential may land in a tracker's params, config, tags or artifacts.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from reflex.callbacks import INITIAL_VAL_LABEL
from reflex.callbacks.guarded import run_urls
from reflex.data.demos import split_chat_demos, template_fields
from reflex.data.templates import is_template
from reflex.models.usage import known_cost
from reflex.redact import is_secret_name, redact_data, redact_url, scrub

if TYPE_CHECKING:
    from reflex.config import RunConfig
    from reflex.result import EvalSnapshot, IterationRecord, OptimizationResult

__all__ = [
    "INITIAL_VAL_LABEL",
    "RUN_END_SERIES",
    "ParamValue",
    "RunningTotals",
    "baseline_metrics",
    "best_train_score",
    "converged",
    "evidence_metrics",
    "iteration_metrics",
    "iteration_row",
    "metric_key",
    "on_model_thread",
    "parse_tag_pairs",
    "race_metrics",
    "race_text",
    "request_params",
    "run_params",
    "run_tags",
    "split_params",
    "split_summary",
    "summary_metrics",
    "wanted",
]

ParamValue = str | int | float | bool | None
T = TypeVar("T")

_METRIC_CHARS = re.compile(r"[^A-Za-z0-9_\-./ ]")


def metric_key(name: str) -> str:
    """A metric name every tracker accepts (MLflow allows ``[A-Za-z0-9_-./ ]``)."""
    return _METRIC_CHARS.sub("_", name)


def _target_source(config: RunConfig) -> str:
    """Where the task model is served: the redacted api_base, else its provider(s)."""
    if config.api_base:
        return redact_url(config.api_base) or ""
    return ",".join(dict.fromkeys(m.partition("/")[0] for m in config.models))


def _digest(value: object) -> str:
    """A short content hash of a JSON value (its canonical text), to tell two settings apart."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _format_name(response_format: Mapping[str, Any] | None) -> str | None:
    """``json_object``, ``text`` or ``json_schema:<name>``; None when the run asks for none."""
    if not response_format:
        return None
    kind = str(response_format.get("type"))
    spec = response_format.get("json_schema")
    return f"{kind}:{spec.get('name')}" if isinstance(spec, Mapping) else kind


def request_params(config: RunConfig, prompt: str | None = None) -> dict[str, ParamValue]:
    """What every task request carried besides the prompt: the tools offered (their names and a
    digest of the schemas), the tool choice, the response format, and whether ``prompt`` is a
    chat template with which variables (``name=field`` where ``--var`` maps another field)."""
    tools = config.tools or []
    choice = config.tool_choice
    if isinstance(choice, Mapping):
        choice = str(choice.get("function", {}).get("name"))
    fields = template_fields(prompt, config.variables) if prompt else None
    shown = [name if field == name else f"{name}={field}" for name, field in (fields or {}).items()]
    return {
        "tools": ",".join(str(t.get("function", {}).get("name")) for t in tools) or None,
        "tools_sha256": _digest(tools) if tools else None,
        "tool_choice": choice,
        "response_format": _format_name(config.response_format),
        "response_format_sha256": _digest(config.response_format)
        if config.response_format
        else None,
        "template": bool(prompt) and is_template(split_chat_demos(prompt or "")[0]),
        "template_variables": ",".join(shown) or None,
    }


def run_params(config: RunConfig, prompt: str | None = None) -> dict[str, ParamValue]:
    """The run's parameters (MLflow params, W&B config). Known at run start; no secrets.

    ``prompt`` (the initial prompt) adds whether it is a chat template and its variables."""
    budget = config.budget.model_dump()
    params: dict[str, ParamValue] = {
        "strategy": config.strategy,
        "reasoning_model": config.reasoning_model,
        "max_iterations": config.max_iterations,
        "score_threshold": config.score_threshold,
        "temperature": config.temperature,
        "max_workers": config.max_workers,
        "target_model": config.models[0],
        "target_source": _target_source(config),
        "models": ",".join(config.models),
        "metrics": ",".join(config.metrics),
        "dataset_name": config.dataset_name,
        "dataset_size": config.dataset_size,
        "train_split": config.train_split,
        "val_split": config.val_split,
        "test_split": config.test_split,
        "seed": config.seed,
        "batch_size": config.batch_size,
        "early_stopping_patience": config.early_stopping_patience,
        "accept": config.accept,
        "prompt_mode": config.prompt_mode,
        **{f"budget_{key}": value for key, value in budget.items()},
        **{f"strategy_{key}": _scalar(value) for key, value in config.strategy_options.items()},
        **request_params(config, prompt),
    }
    return redact_data(params, *run_urls(config))


def split_params(result: OptimizationResult) -> dict[str, ParamValue]:
    """Split sizes (rows per split); known once the engine has split the dataset."""
    return {f"split_size_{name}": size for name, size in result.split_sizes.items()}


def run_tags(config: RunConfig, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """``reflex.*`` tags plus the user's own; secret-named keys are dropped, values redacted."""
    from reflex.result import VERSION

    tags = {
        "reflex.version": VERSION,
        "reflex.strategy": config.strategy,
        "reflex.data.dataset": config.dataset_name,
        "reflex.target_model": config.models[0],
        **({"reflex.run_id": config.run_id} if config.run_id else {}),
        **dict(extra or {}),
    }
    return {k: scrub(str(v), *run_urls(config)) for k, v in tags.items() if not is_secret_name(k)}


def baseline_metrics(snapshot: EvalSnapshot) -> dict[str, float]:
    """``score_test`` and ``score_test_<metric>`` for a test-split snapshot."""
    metrics = {"score_test": snapshot.mean_score}
    for name, value in snapshot.scores_by_metric.items():
        metrics[f"score_test_{metric_key(name)}"] = value
    return metrics


def iteration_metrics(record: IterationRecord) -> dict[str, float]:
    """Train (``score_train``, ``score_<metric>``), val, and the run's tokens and cost so far
    (no ``cost_usd`` while every paid call was unpriced: its cost is unknown, not 0)."""
    metrics: dict[str, float] = {"tokens": float(record.tokens)}
    cost = known_cost(record.cost, record.calls, record.cost_unknown)
    if cost is not None:
        metrics["cost_usd"] = cost
    if record.score is not None:
        metrics["score_train"] = record.score
    if record.val_score is not None:
        metrics["score_val"] = record.val_score
    for name, value in record.scores_by_metric.items():
        metrics[f"score_{metric_key(name)}"] = value
    return {**metrics, **evidence_metrics(record.evidence), **race_metrics(record.race)}


def evidence_metrics(evidence: Mapping[str, Any] | None) -> dict[str, float]:
    """The acceptance gate's evidence for one candidate (``IterationRecord.evidence``):
    ``accept_diff`` (mean paired val difference against the incumbent), ``accept_p`` (one-sided
    p), ``accept_rows``, ``accept_passed`` (1/0) and, on a label task, ``label_accuracy_val``,
    ``constant_val`` and ``beats_constant_val`` (1/0)."""
    if not evidence:
        return {}
    label = evidence.get("label") or {}
    values = {
        "accept_diff": evidence.get("diff"),
        "accept_p": evidence.get("p"),
        "accept_rows": evidence.get("rows"),
        "accept_passed": evidence.get("passed"),
        "label_accuracy_val": label.get("accuracy"),
        "constant_val": label.get("constant"),
        "beats_constant_val": label.get("beats_constant"),
    }
    return {k: float(v) for k, v in values.items() if isinstance(v, int | float)}


def race_metrics(race: Mapping[str, Any] | None) -> dict[str, float]:
    """A raced candidate's race (``IterationRecord.race``): ``race_rung`` (its last rung, from
    1), ``race_rows``, ``race_score`` and ``race_leader_score`` there, ``race_p`` (the leader's
    one-sided paired p over it; 1 when it led) and ``race_dropped`` (1/0)."""
    if not race:
        return {}
    values = {f"race_{key}": race.get(key) for key in ("rung", "score", "leader_score", "p")}
    values |= {"race_rows": len(race.get("rows") or ()), "race_dropped": race.get("dropped")}
    return {k: float(v) for k, v in values.items() if isinstance(v, int | float)}


def race_text(race: Mapping[str, Any] | None) -> str:
    """A raced candidate's race in a few words ("" when it was not raced)."""
    if not race:
        return ""
    score, rows = race.get("score"), len(race.get("rows") or ())
    shown = f"{score:.3f}" if isinstance(score, int | float) else "n/a"
    where = f"rung {race.get('rung')}/{race.get('rungs')}: {shown} on {rows} val rows"
    return f"{'dropped' if race.get('dropped') else 'survived'} at {where}"


def iteration_row(record: IterationRecord) -> dict[str, Any]:
    """One row of the live iterations table."""
    return {
        "iteration": record.iteration,
        "score": record.score,
        "val_score": record.val_score,
        "accepted": record.accepted,
        "is_best": record.is_best,
        "phase": record.phase,
        "prompt": record.system_prompt,
        "reasoning": record.reasoning,
        "failed": record.failed or "",
        "race": race_text(record.race),
    }


def best_train_score(result: OptimizationResult) -> float | None:
    """The best train score seen during optimization (the highest iteration ``score``)."""
    return max((r.score for r in result.iterations if r.score is not None), default=None)


def converged(result: OptimizationResult) -> bool:
    """Whether the run stopped on its own: score threshold reached or val improvement stalled."""
    return result.completed and result.stop is not None and result.stop.converged


def summary_metrics(result: OptimizationResult) -> dict[str, float]:
    """End-of-run numbers. Unknown values (e.g. no final after a failure) are left out, except
    ``improvement_pct``: always present, NaN when undefined (``improvement_pct_note`` says why,
    e.g. a baseline of 0); ``result.json`` holds null and the same note."""
    total = dict(result.usage.get("total", {}))
    pct = result.improvement_pct
    values: dict[str, float | None] = {
        "best_score_train": best_train_score(result),
        "best_score_val": result.best_score_val,
        "baseline_score": result.baseline.mean_score if result.baseline else None,
        "final_score_test": result.final.mean_score if result.final else None,
        "improvement": result.improvement,
        "improvement_pct": math.nan if pct is None else pct,
        "p_value": result.p_value,
        "converged": float(converged(result)),
        "total_iterations": float(len(result.iterations)),
        "total_tokens": _number(total.get("tokens")),
        "total_cost_usd": _number(total.get("cost")),
        **_checks(result.selection, result.label_check),
    }
    return {key: value for key, value in values.items() if value is not None}


def _checks(
    selection: Mapping[str, Any] | None, label: Mapping[str, Any] | None
) -> dict[str, float | None]:
    """The best-of-many correction (``selection_*``) and the winner's label check on test."""
    selection, label = selection or {}, label or {}
    values = {
        "selection_p": selection.get("p"),
        "selection_bound": selection.get("bound"),
        "selection_kept": selection.get("kept"),
        "label_accuracy_test": label.get("accuracy"),
        "constant_test": label.get("constant"),
        "beats_constant_test": label.get("beats_constant"),
        "trivial_winner": label.get("trivial"),
        "off_label_test": label.get("off_label_rows"),
        "near_miss_test": label.get("near_miss_rows"),
    }
    return {k: _number(v) for k, v in values.items()}


RUN_END_SERIES = (
    "best_score_train",
    "best_score_val",
    "total_iterations",
    "total_tokens",
    "total_cost_usd",
)
"""The run-end numbers that have a true value after every iteration (a running best or total):
trackers log them as a series, one point per iteration, whose last point is the run-end number."""


class RunningTotals:
    """The running values of :data:`RUN_END_SERIES` after each iteration, fed in order.

    ``best_score_train``: the best train score seen so far; ``best_score_val``: the val score of
    the best prompt so far (its train score when the run has no val split): the initial
    prompt's val score (:meth:`seed_val`) until a candidate beats it; ``total_iterations``:
    iterations so far; ``total_tokens``/``total_cost_usd``: the run's totals so far (the
    record's own; no cost while every paid call was unpriced). A name with no value yet (no
    score measured so far) is left out. Feeding an iteration again (a resumed run's catch-up,
    then its live hook) returns the values it had the first time.
    """

    def __init__(self) -> None:
        self._seen: dict[int, dict[str, float]] = {}
        self._best_train: float | None = None
        self._best_val: float | None = None

    def seed_val(self, score: float | None) -> None:
        """The initial prompt's val score: the running best val before the first iteration
        (ignored once an iteration was fed; a run with no val split has none)."""
        if score is not None and not self._seen and self._best_val is None:
            self._best_val = float(score)

    def add(self, record: IterationRecord) -> dict[str, float]:
        if record.iteration in self._seen:
            return self._seen[record.iteration]
        best = self._best_train
        if record.score is not None and (best is None or record.score > best):
            self._best_train = record.score
        selection = record.val_score if record.val_score is not None else record.score
        if record.is_best and selection is not None:
            self._best_val = selection
        values: dict[str, float | None] = {
            "best_score_train": self._best_train,
            "best_score_val": self._best_val,
            "total_iterations": float(len(self._seen) + 1),
            "total_tokens": float(record.tokens),
            "total_cost_usd": known_cost(record.cost, record.calls, record.cost_unknown),
        }
        self._seen[record.iteration] = {k: v for k, v in values.items() if v is not None}
        return self._seen[record.iteration]


def split_summary(numbers: Mapping[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    """``summary_metrics`` split into (the ends of the running series, the one-off numbers)."""
    series = {k: v for k, v in numbers.items() if k in RUN_END_SERIES}
    return series, {k: v for k, v in numbers.items() if k not in RUN_END_SERIES}


def parse_tag_pairs(pairs: Iterable[str]) -> dict[str, str]:
    """``["team=search", "stage=dev"]`` -> a dict; a pair without ``=`` raises ValueError."""
    tags: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"tag {pair!r} is not KEY=VALUE; write e.g. team=search")
        tags[key.strip()] = value.strip()
    return tags


def wanted(values: Mapping[str, Any], prefix: str) -> bool:
    """CLI: a tracker is on when its flag, or any of its other options, was given."""
    return any(
        value not in (None, False, ())
        for key, value in values.items()
        if key == prefix or key.startswith(prefix + "_")
    )


def on_model_thread(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the thread that makes every model call of a run, and return its result.

    For tracker state that is bound to the calling thread: MLflow links a LiteLLM trace to the
    run active in the thread of the call, so the tracing activates the run there.
    """
    from reflex.models.runner import LoopRunner  # asyncio and the loop: only when asked for

    return LoopRunner.shared().run(coro)


def _scalar(value: Any) -> ParamValue:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None
