"""A registry alias mirrored on the W&B artifact of the saved prompt (``best-prompt``).

``promote`` and ``rollback`` (``reflex_mlflow``) move an MLflow registry alias and announce it
(the ``prompt_alias_moved`` hook). When the run that made the version now holding the alias (or,
failing that, the one that made the version it replaced) was logged to W&B, :func:`mirror_alias`
sets the same alias on that project's ``best-prompt`` artifact.

An ended W&B run cannot take new aliases, and in offline mode W&B has no ``use_artifact`` nor
``link_artifact`` (wandb 0.31 raises or does nothing), so the alias travels the one way that works
in both modes: a small run of its own (``job_type`` ``reflex-promote`` / ``reflex-rollback``, in
the W&B run's project, mode and folder) logs the saved prompt again as ``best-prompt`` with the
alias. The file is the run's ``best_prompt.txt`` byte for byte, so the artifact's digest is the
one the winner's run logged: W&B keeps one version per digest and the alias lands on that
version (offline: when ``wandb sync`` uploads the folder). W&B adds ``latest`` to every logged
artifact; a rollback therefore also marks the older version ``latest``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import wandb

from reflex.api.tracking import resolve_run, tracker_state

__all__ = ["ARTIFACT", "PROMPT_FILE", "mirror_alias", "prompt_artifact"]

ARTIFACT = "best-prompt"
PROMPT_FILE = "best_prompt.txt"


def prompt_artifact(prompt: str, metadata: Mapping[str, Any]) -> Any:
    """The saved prompt as the ``best-prompt`` artifact (one file, ``best_prompt.txt``)."""
    artifact = wandb.Artifact(ARTIFACT, type="prompt", metadata=dict(metadata))
    with artifact.new_file(PROMPT_FILE, encoding="utf-8") as handle:
        handle.write(prompt)
    return artifact


def mirror_alias(
    name: str,
    alias: str,
    version: str,
    previous: str | None,
    run_id: str | None,
    previous_run_id: str | None,
    prompt: str,
    action: str,
    run_dir: str,
) -> str | None:
    """Set ``alias`` on the W&B ``best-prompt`` of the version the alias now holds; a line
    saying where, or None when neither run of the move was logged to W&B."""
    found = _logged_run(run_dir, run_id) or _logged_run(run_dir, previous_run_id)
    if found is None:
        return None
    state, _ = found
    own = _folder(run_dir, run_id)
    text = _best_prompt(own) if own is not None else None
    sync_dirs = [str(d) for d in state.get("sync_dirs", [])]
    mode = state.get("mode") or _mode_of(sync_dirs)
    run = wandb.init(
        project=state.get("project"),
        entity=state.get("entity"),
        mode=mode,  # type: ignore[arg-type]  # wandb checks the value itself
        dir=_root(sync_dirs),
        job_type=f"reflex-{action}",
        name=f"{action}-{name}-{alias}-v{version}",
        config={
            "prompt": name,
            "alias": alias,
            "version": version,
            "previous": previous,
            "reflex_run_id": run_id,
            "action": action,
        },
        reinit="create_new",
    )
    try:
        metadata = {"reflex_run_id": run_id, "mlflow_prompt": f"prompts:/{name}/{version}"}
        artifact = prompt_artifact(prompt if text is None else text, metadata)
        run.log_artifact(artifact, aliases=[alias])
    finally:
        run.finish()
    return _said(run, alias, version, name)


def _said(run: Any, alias: str, version: str, name: str) -> str:
    path = "/".join(p for p in (run.entity, run.project) if p)
    what = f"W&B: @{alias} on {path}/{ARTIFACT} ({name} v{version})"
    if run.settings.mode == "offline":
        return f"{what}, offline in {run.settings.sync_dir} (upload: wandb sync that folder)"
    return what


def _folder(run_dir: str, run_id: str | None) -> Path | None:
    if not run_id:
        return None
    try:
        return resolve_run(run_id, run_dir)
    except Exception:  # noqa: BLE001 - not a run of this folder (another machine's): skip it
        return None


def _logged_run(run_dir: str, run_id: str | None) -> tuple[dict[str, Any], Path] | None:
    """The W&B state of run ``run_id`` (None when it has no folder here or was not on W&B)."""
    folder = _folder(run_dir, run_id)
    if folder is None:
        return None
    state = tracker_state(folder, "wandb")
    return (state, folder) if state.get("run_id") and state.get("project") else None


def _best_prompt(folder: Path) -> str | None:
    """The prompt the run saved (its result.json), as the artifact's file holds it."""
    try:
        result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    best = result.get("best_prompt") if isinstance(result, dict) else None
    return best if isinstance(best, str) else None


def _mode_of(sync_dirs: list[str]) -> str | None:
    """An older state without ``mode``: offline when its folder is an offline run's."""
    if sync_dirs and Path(sync_dirs[-1]).name.startswith("offline-run-"):
        return "offline"
    return None


def _root(sync_dirs: list[str]) -> str | None:
    """The ``dir`` the W&B run was started with: its sync folder is ``<dir>/wandb/<run>``."""
    return str(Path(sync_dirs[-1]).parent.parent) if sync_dirs else None
