"""Move a prompt-registry alias to a run's winner behind ``check``'s gate, and back.

- :func:`promote`: the version a run registered (its tracker state: ``register_best`` saved it)
  takes ``@alias`` only when it does not regress against the version the alias holds now
  (:func:`reflex.api.tracking.plan_gate`); refused, the alias stays and the figures say why.
- :func:`rollback`: the alias goes back to the version it held before the last promote.

What each move replaced is kept on the prompt, in the tag ``reflex.alias.<alias>`` (JSON:
``version``, ``previous``, ``action``, ``run_id``), so a rollback knows where to go, and a second
promote or rollback of the same move is a no-op that says so.

Each move is then announced to the other trackers (:func:`reflex.api.tracking.announce_alias_move`,
the ``prompt_alias_moved`` hook): ``reflex_wandb`` sets the same alias on the W&B artifact of
the saved prompt; what each did is in :attr:`Move.mirrors`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reflex.api import ConfigurationError
from reflex.api.tracking import (
    REDACTED,
    announce_alias_move,
    plan_gate,
    resolve_run,
    tracker_state,
)
from reflex_mlflow.prompts import prompt_from_version, tracking_uri_for

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities.model_registry import PromptVersion

    from reflex.api.tracking import CheckOutcome

__all__ = ["Move", "alias_tag", "promote", "rollback"]

Echo = Callable[[str], None]


@dataclass(frozen=True)
class Move:
    """What a promote or rollback did: ``changed`` False for a no-op or a refusal."""

    name: str
    alias: str
    version: str  # the version the alias holds afterwards
    previous: str | None  # the one it held before
    changed: bool
    message: str
    outcome: CheckOutcome | None = None  # the gate's figures (None: no gate was needed)
    lines: list[str] = field(default_factory=list)
    mirrors: list[str] = field(default_factory=list)  # what other trackers did (W&B's alias)

    @property
    def refused(self) -> bool:
        return self.outcome is not None and self.outcome.regressed


def alias_tag(alias: str) -> str:
    """The prompt tag that records ``alias``'s last move."""
    return f"reflex.alias.{alias}"


def promote(
    run: str,
    alias: str = "production",
    *,
    tracking_uri: str | None = None,
    dataset: str | Path | None = None,
    tolerance: float = 0.0,
    run_dir: str | Path = ".reflex",
    api_base: str | None = None,
    judge_api_base: str | None = None,
    echo: Echo | None = None,
) -> Move:
    """Point ``@alias`` at the version run ``run`` registered, if the gate holds.

    The gate scores the alias's current version and the winner on the run's test rows (or on
    ``dataset``) through the run's cache; ``echo`` gets the plan (rows, calls) before any call.
    A refusal returns a Move with ``refused`` True and the figures in ``lines``.
    """
    folder = resolve_run(run, run_dir)
    state = tracker_state(folder, "mlflow")
    name, version = state.get("prompt_name"), state.get("prompt_version")
    if not name or not version:
        raise ConfigurationError(
            f"run {folder.name} registered no prompt version in MLflow: run it with "
            "--mlflow-register-prompt NAME, or start it from prompts:/NAME/..."
        )
    client = _client(_store(tracking_uri, state, folder.name))
    holder = _holder(client, name, alias)
    if holder is not None and holder.version == int(version):
        return Move(name, alias, version, None, False, f"@{alias} already holds {name} v{version}")
    outcome, lines = None, []
    if holder is not None:
        label = f"{name} v{holder.version} (@{alias})"
        incumbent = prompt_from_version(holder).render()
        gate = plan_gate(
            folder,
            incumbent,
            label,
            dataset=dataset,
            api_base=api_base,
            judge_api_base=judge_api_base,
        )
        for line in gate.plan_lines():
            (echo or _quiet)(line)
        outcome = gate.decide(tolerance)
        lines = outcome.lines()
        if outcome.regressed:
            why = _why(outcome, gate.rows_label)
            message = (
                f"refused: {name} v{version} regresses against {label} ({why}); @{alias} unchanged"
            )
            return Move(name, alias, str(holder.version), None, False, message, outcome, lines)
    previous = str(holder.version) if holder is not None else None
    _move(client, name, alias, version, previous, "promote", run_id=folder.name)
    before = f"v{previous}" if previous else "no version"
    message = f"@{alias} of {name}: {before} -> v{version} (run {folder.name})"
    mirrors = _announce(client, name, alias, version, holder, "promote", run_dir)
    return Move(name, alias, version, previous, True, message, outcome, lines, mirrors)


def rollback(
    name: str,
    alias: str = "production",
    *,
    tracking_uri: str | None = None,
    run_dir: str | Path = ".reflex",
) -> Move:
    """Point ``@alias`` back at the version it held before the last promote (``run_dir``: where
    the runs are, for the trackers that mirror the alias)."""
    client = _client(tracking_uri_for(f"prompts:/{name}@{alias}", tracking_uri))
    prompt = _prompt(client, name)
    holder = _holder(client, name, alias)
    record = _record(prompt.tags.get(alias_tag(alias)))
    current = str(holder.version) if holder is not None else None
    if record.get("action") == "rollback" and record.get("version") == current:
        message = f"@{alias} of {name} is already rolled back to v{current}"
        return Move(name, alias, str(current), record.get("previous"), False, message)
    if not record or record.get("version") != current:
        raise ConfigurationError(
            f"@{alias} of {name}: no promote recorded for its current holder "
            f"(v{current or '-'}); nothing to roll back to"
        )
    previous = record.get("previous")
    if not previous:
        raise ConfigurationError(
            f"@{alias} of {name}: no version held it before v{current}; nothing to roll back to"
        )
    _move(client, name, alias, str(previous), current, "rollback")
    message = f"@{alias} of {name}: v{current} -> v{previous} (rolled back)"
    mirrors = _announce(client, name, alias, str(previous), holder, "rollback", run_dir)
    return Move(name, alias, str(previous), current, True, message, mirrors=mirrors)


def _announce(
    client: MlflowClient,
    name: str,
    alias: str,
    version: str,
    holder: PromptVersion | None,
    action: str,
    run_dir: str | Path,
) -> list[str]:
    """Tell the other trackers that ``@alias`` now holds ``version`` (``holder``: the version it
    replaced); each version's ``reflex.run_id`` tag names the run that made it."""
    now = client.get_prompt_version(name, version)
    return announce_alias_move(
        name=name,
        alias=alias,
        version=version,
        previous=str(holder.version) if holder is not None else None,
        run_id=(now.tags or {}).get("reflex.run_id") or None,
        previous_run_id=(holder.tags or {}).get("reflex.run_id") if holder is not None else None,
        prompt=prompt_from_version(now).render(),
        action=action,
        run_dir=str(run_dir),
    )


def _why(outcome: CheckOutcome, rows: str) -> str:
    """The figures of a refusal: what was compared, on which rows, against which threshold."""
    if outcome.current.n_errors:
        return f"{outcome.current.n_errors} row(s) of {rows} errored"
    said = f"{outcome.delta:+.4f} on {rows}, beyond the tolerance {outcome.tolerance:.4f}"
    if outcome.test is not None and outcome.alpha is not None:
        said += f", significant: paired p={outcome.test.p_value:.4g} < alpha {outcome.alpha:g}"
    return said


def _quiet(line: str) -> None:
    del line


def _store(given: str | None, state: dict[str, Any], run: str) -> str:
    if given:
        return given
    saved = state.get("tracking_uri")
    if saved and REDACTED not in str(saved):
        return str(saved)
    if saved:
        raise ConfigurationError(
            f"run {run}'s MLflow tracking URI held credentials and was stored redacted: pass "
            "--mlflow-tracking-uri URI"
        )
    return tracking_uri_for(f"run {run}")


def _client(uri: str) -> MlflowClient:
    from mlflow import MlflowClient

    from reflex_mlflow.connection import check_reachable

    try:
        check_reachable(uri)
    except ConnectionError as exc:
        raise ConfigurationError(str(exc)) from None
    return MlflowClient(tracking_uri=uri)


def _prompt(client: MlflowClient, name: str) -> Any:
    found = client.get_prompt(name)
    if found is None:
        raise ConfigurationError(f"no prompt named {name!r} in the registry")
    return found


def _holder(client: MlflowClient, name: str, alias: str) -> PromptVersion | None:
    from mlflow.exceptions import MlflowException

    _prompt(client, name)
    try:
        found: PromptVersion = client.get_prompt_version_by_alias(name, alias)
    except MlflowException:
        return None  # the alias is not set yet
    return found


def _record(text: str | None) -> dict[str, Any]:
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _move(
    client: MlflowClient,
    name: str,
    alias: str,
    version: str,
    previous: str | None,
    action: str,
    run_id: str | None = None,
) -> None:
    record = {"version": version, "previous": previous, "action": action, "run_id": run_id}
    client.set_prompt_alias(name, alias, int(version))
    client.set_prompt_tag(name, alias_tag(alias), json.dumps(record))
