"""Experiments and the prompt registry, through one ``MlflowClient`` (never the global URI).

- :func:`experiment_id`: get-or-create an experiment by name, safe when several processes
  start runs in a new experiment at once (one creates it; the others re-read it by name).
- :func:`register_best`: register a run's best prompt as a new version (of the prompt it
  started from, by default), linked to the run and tagged with its scores.
- :func:`link_prompt`: link a registered prompt version to a run in the client's own tracking
  store. MLflow's ``link_prompt_version_to_run`` looks the run up in the *process-global*
  tracking store (``MLFLOW_TRACKING_URI`` or the default), so with only ``tracking_uri=`` set
  it fails ("Run ... not found") or writes into another store.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from mlflow import MlflowClient
from mlflow.entities import RunTag
from mlflow.entities.model_registry import PromptVersion
from mlflow.exceptions import MlflowException
from mlflow.tracing.utils.prompt import update_linked_prompts_tag

from reflex.api import saved_template
from reflex.api.tracking import save_tracker_state
from reflex_mlflow.prompts import parse_prompt_uri, registry_template

if TYPE_CHECKING:
    from reflex.api import EvalSnapshot, OptimizationResult

__all__ = ["LINKED_PROMPTS", "experiment_id", "link_prompt", "register_best"]

LINKED_PROMPTS = "mlflow.linkedPrompts"  # the run tag MLflow's UI reads the links from
_ATTEMPTS = 5
_PAUSE = 0.2  # seconds, times the attempt number: the winner's row may not be readable yet


def experiment_id(client: MlflowClient, name: str, attempts: int = _ATTEMPTS) -> str:
    """The id of the experiment ``name``, created when missing.

    Another process may create it between our read and our create: the create then fails
    with "already exists" (a unique-constraint violation in the store), and the experiment is
    read again by name. Any other error is raised; so is the last one after ``attempts``.
    """
    attempt = 0
    while True:
        attempt += 1
        experiment = client.get_experiment_by_name(name)
        if experiment is not None:
            return str(experiment.experiment_id)
        try:
            return str(client.create_experiment(name))
        except MlflowException as exc:
            if not _already_exists(exc) or attempt >= attempts:
                raise
        time.sleep(_PAUSE * attempt)


def _already_exists(exc: MlflowException) -> bool:
    text = str(exc).lower()
    return exc.error_code == "RESOURCE_ALREADY_EXISTS" or any(
        sign in text for sign in ("already exists", "unique constraint", "duplicate key")
    )


def link_prompt(client: MlflowClient, run_id: str, version: PromptVersion) -> None:
    """Add ``version`` to the run's ``mlflow.linkedPrompts`` tag, in ``client``'s store (what
    ``MlflowClient.link_prompt_version_to_run`` does, without the global tracking URI)."""
    current = client.get_run(run_id).data.tags.get(LINKED_PROMPTS)
    updated = update_linked_prompts_tag(current, [version])
    if updated != current:
        client.log_batch(run_id, tags=[RunTag(LINKED_PROMPTS, updated)])


def register_best(
    client: MlflowClient, run_id: str, name: str | None, result: OptimizationResult
) -> PromptVersion | None:
    """Register the best prompt as a new version of ``name`` (default: the registered prompt
    the run started from, ``prompts:/NAME/...``; neither: nothing is registered) and link that
    version to the run. Its tags say where it came from and what it scored; the version is
    saved in the run directory's tracker state, where ``promote RUN`` finds it."""
    run_dir = Path(result.run_dir) if result.run_dir else None
    source = _prompt_source(run_dir)
    name = name or (source[0] if source else None)
    if name is None:
        return None
    text_source = _is_text(client, source) if source and source[0] == name else None
    if text_source is None:
        text_source = saved_template(result.best_prompt) is None
    version: PromptVersion = client.register_prompt(
        name,
        template=registry_template(result.best_prompt, text_source),
        commit_message=_message(result),
        tags=_version_tags(result, run_id, source),
    )
    link_prompt(client, run_id, version)  # in this client's store, not the global one
    save_tracker_state(run_dir, "mlflow", prompt_name=name, prompt_version=str(version.version))
    return version


def _prompt_source(run_dir: Path | None) -> tuple[str, str] | None:
    """``(name, version)`` of the registered prompt the run started from (its config.json)."""
    if run_dir is None:
        return None
    try:
        config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    source = config.get("prompt_source") if isinstance(config, dict) else None
    if not source:
        return None
    name, version, _ = parse_prompt_uri(str(source))
    return (name, version) if version else None


def _is_text(client: MlflowClient, source: tuple[str, str]) -> bool | None:
    found = client.get_prompt_version(*source)
    return None if found is None else bool(found.is_text_prompt)


def _score(snapshot: EvalSnapshot | None) -> str:
    return "" if snapshot is None else f"{snapshot.mean_score:.6g}"


def _message(result: OptimizationResult) -> str:
    baseline, final = _score(result.baseline), _score(result.final)
    p = "" if result.p_value is None else f", paired p={result.p_value:.4g}"
    return f"aevyra-reflex run {result.run_id}: test score {baseline or '?'} -> {final or '?'}{p}"


def _version_tags(
    result: OptimizationResult, run_id: str, source: tuple[str, str] | None
) -> dict[str, str]:
    tags = {
        "reflex.run_id": result.run_id or "",
        "mlflow.run_id": run_id,
        "reflex.test_baseline": _score(result.baseline),
        "reflex.test_final": _score(result.final),
        "reflex.test_rows": str(len(result.final.samples)) if result.final is not None else "",
        "reflex.p_value": "" if result.p_value is None else f"{result.p_value:.6g}",
        "reflex.end_state": result.end_state.name.lower() if result.end_state else "",
        "reflex.source": f"prompts:/{source[0]}/{source[1]}" if source else "",
    }
    return {key: value for key, value in tags.items() if value}
