"""Experiments and the prompt registry, through one ``MlflowClient`` (never the global URI).

- :func:`experiment_id`: get-or-create an experiment by name, safe when several processes
  start runs in a new experiment at once (one creates it; the others re-read it by name).
- :func:`register_best`: register a run's best prompt as a new version, linked to the run.
- :func:`link_prompt`: link a registered prompt version to a run in the client's own tracking
  store. MLflow's ``link_prompt_version_to_run`` looks the run up in the *process-global*
  tracking store (``MLFLOW_TRACKING_URI`` or the default), so with only ``tracking_uri=`` set
  it fails ("Run ... not found") or writes into another store.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from mlflow import MlflowClient
from mlflow.entities import RunTag
from mlflow.entities.model_registry import PromptVersion
from mlflow.exceptions import MlflowException
from mlflow.tracing.utils.prompt import update_linked_prompts_tag

if TYPE_CHECKING:
    from reflex.api import OptimizationResult

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


def register_best(client: MlflowClient, run_id: str, name: str, result: OptimizationResult) -> None:
    """Register the best prompt as a new version of ``name`` and link that version to the run."""
    final = result.final.mean_score if result.final is not None else None
    version = client.register_prompt(
        name,
        template=result.best_prompt,
        commit_message=f"aevyra-reflex run {result.run_id}: test score {final}",
        tags={"reflex.run_id": result.run_id or "", "mlflow.run_id": run_id},
    )
    link_prompt(client, run_id, version)  # in this client's store, not the global one
