"""What the tracker adapters log, independent of any tracker (no mlflow or wandb import).

Both ``reflex_mlflow`` and ``reflex_wandb`` use these functions, so an MLflow run and a W&B run
of the same optimization carry the same parameter keys, metric names and summary values.
Everything that leaves the process goes through :func:`redact` first: no API key or secret may
land in a tracker's params, config, tags or artifacts.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from reflex.callbacks import Callback

if TYPE_CHECKING:
    from reflex.config import RunConfig
    from reflex.result import EvalSnapshot, IterationRecord, OptimizationResult

__all__ = [
    "GuardedCallback",
    "ParamValue",
    "baseline_metrics",
    "best_train_score",
    "converged",
    "iteration_metrics",
    "iteration_row",
    "metric_key",
    "parse_tag_pairs",
    "redact",
    "redact_data",
    "run_params",
    "run_tags",
    "safe_url",
    "split_params",
    "summary_metrics",
    "wanted",
]

ParamValue = str | int | float | bool | None

logger = logging.getLogger(__name__)

# Names that mark a value as secret, in env vars, URL query parameters and tag keys.
_SECRET_NAME = re.compile(
    r"(?:^|[_\-.])(?:api[_-]?key|key|token|secret|password|passwd|auth|credentials?)(?:$|[_\-.])",
    re.I,
)
_METRIC_CHARS = re.compile(r"[^A-Za-z0-9_\-./ ]")
_MIN_SECRET_LEN = 8  # shorter env values ("1", "true") would redact ordinary text


def safe_url(url: str | None) -> str | None:
    """``url`` without user:password and without secret-looking query parameters."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    query = urlencode(
        [
            (k, v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
            if not _SECRET_NAME.search(k)
        ]
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def _env_secrets() -> list[str]:
    values = [
        value
        for name, value in os.environ.items()
        if _SECRET_NAME.search(name) and len(value) >= _MIN_SECRET_LEN
    ]
    return sorted(set(values), key=len, reverse=True)


def redact(text: str) -> str:
    """``text`` with the value of every secret-named environment variable replaced by ``***``."""
    for secret in _env_secrets():
        text = text.replace(secret, "***")
    return text


def redact_data(data: Any) -> Any:
    """A JSON-able structure with every secret value redacted (round-trips through JSON)."""
    text = json.dumps(data, ensure_ascii=False, default=str)
    redacted = redact(text)
    return data if redacted == text else json.loads(redacted)


def metric_key(name: str) -> str:
    """A metric name every tracker accepts (MLflow allows ``[A-Za-z0-9_-./ ]``)."""
    return _METRIC_CHARS.sub("_", name)


def _target_source(config: RunConfig) -> str:
    """Where the task model is served: the (credential-free) api_base, else its provider(s)."""
    if config.api_base:
        return safe_url(config.api_base) or ""
    return ",".join(dict.fromkeys(m.partition("/")[0] for m in config.models))


def run_params(config: RunConfig) -> dict[str, ParamValue]:
    """The run's parameters (MLflow params, W&B config). Known at run start; no secrets."""
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
        "prompt_mode": config.prompt_mode,
        **{f"budget_{key}": value for key, value in budget.items()},
        **{f"strategy_{key}": _scalar(value) for key, value in config.strategy_options.items()},
    }
    return {key: _clean(key, value) for key, value in params.items()}


def split_params(result: OptimizationResult) -> dict[str, ParamValue]:
    """Split sizes (rows per split); known once the engine has split the dataset."""
    return {f"split_size_{name}": size for name, size in result.split_sizes.items()}


def run_tags(config: RunConfig, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """``reflex.*`` tags plus the user's own; secret-named keys are dropped, values redacted."""
    from reflex import __version__

    tags = {
        "reflex.version": __version__,
        "reflex.strategy": config.strategy,
        "reflex.data.dataset": config.dataset_name,
        "reflex.target_model": config.models[0],
        **({"reflex.run_id": config.run_id} if config.run_id else {}),
        **dict(extra or {}),
    }
    return {k: redact(str(v)) for k, v in tags.items() if not _SECRET_NAME.search(k)}


def baseline_metrics(snapshot: EvalSnapshot) -> dict[str, float]:
    """``score_test`` and ``score_test_<metric>`` for a test-split snapshot."""
    metrics = {"score_test": snapshot.mean_score}
    for name, value in snapshot.scores_by_metric.items():
        metrics[f"score_test_{metric_key(name)}"] = value
    return metrics


def iteration_metrics(record: IterationRecord) -> dict[str, float]:
    """Train (``score_train``, ``score_<metric>``), val, and the run's tokens and cost so far."""
    metrics: dict[str, float] = {"tokens": float(record.tokens), "cost_usd": record.cost}
    if record.score is not None:
        metrics["score_train"] = record.score
    if record.val_score is not None:
        metrics["score_val"] = record.val_score
    for name, value in record.scores_by_metric.items():
        metrics[f"score_{metric_key(name)}"] = value
    return metrics


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
    }


def best_train_score(result: OptimizationResult) -> float | None:
    """The train score of the best prompt (its latest scored iteration), if it has one."""
    for record in reversed(result.iterations):
        if record.system_prompt == result.best_prompt and record.score is not None:
            return record.score
    return None


def converged(result: OptimizationResult) -> bool:
    """Whether the run stopped on its own: score threshold reached or val improvement stalled."""
    return result.completed and result.stop is not None and result.stop.converged


def summary_metrics(result: OptimizationResult) -> dict[str, float]:
    """End-of-run numbers; values that are unknown (e.g. no final after a failure) are left out."""
    total = dict(result.usage.get("total", {}))
    values: dict[str, float | None] = {
        "best_score_train": best_train_score(result),
        "best_score_val": result.best_score,
        "baseline_score": result.baseline.mean_score if result.baseline else None,
        "final_score_test": result.final.mean_score if result.final else None,
        "improvement": result.improvement,
        "improvement_pct": result.improvement_pct,
        "p_value": result.p_value,
        "converged": float(converged(result)),
        "total_iterations": float(len(result.iterations)),
        "total_tokens": _number(total.get("tokens")),
        "total_cost_usd": _number(total.get("cost")),
    }
    return {key: value for key, value in values.items() if value is not None}


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


def _scalar(value: Any) -> ParamValue:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _clean(key: str, value: ParamValue) -> ParamValue:
    if _SECRET_NAME.search(key):
        return "***"
    return redact(value) if isinstance(value, str) else value


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


class GuardedCallback(Callback):
    """Base for tracker callbacks: a failing tracker call is a warning, never an exception.

    Subclasses wrap each hook's work in :meth:`_safely`. If the failure happens before the
    tracker run exists (``_has_run()`` is false), the callback switches itself off, so a tracker
    that is down costs one warning, not one per iteration.
    """

    tracker: ClassVar[str] = "tracker"

    _off: bool = False

    def _has_run(self) -> bool:
        raise NotImplementedError

    def _safely(self, hook: str, action: Callable[[], None]) -> None:
        if self._off:
            return
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - a tracker must never break or lose a run
            logger.warning(
                "%s logging failed in %s (the optimization goes on): %s: %s",
                self.tracker,
                hook,
                type(exc).__name__,
                redact(str(exc))[:500],
            )
            if not self._has_run():
                self._off = True
