"""What a continued MLflow run already holds, so a resume or a replay logs each point once.

A resumed reflex run, ``aevyra-reflex sync`` and ``run_id=`` continue an MLflow run: before
logging, the callback asks which values the run has (``unlogged``) and reads back the iterations
table it wrote (``read_table``).
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mlflow import MlflowClient

__all__ = ["read_table", "taken_steps", "unlogged"]


def unlogged(
    client: MlflowClient, run_id: str, metrics: Mapping[str, float], step: int
) -> dict[str, float]:
    """The ``metrics`` the run does not hold at ``step`` with the same value. A new value at a
    step that has one (e.g. the end of a resumed run after a failed run's partial numbers) is
    kept: logged later, it becomes the metric's latest value."""
    return {
        key: value
        for key, value in metrics.items()
        if not any(
            point.step == step and _same(point.value, value)
            for point in client.get_metric_history(run_id, key)
        )
    }


def taken_steps(
    client: MlflowClient, run_id: str, keys: Iterable[str], after: int
) -> dict[int, set[str]]:
    """Step -> the ``keys`` the run holds at that step, for the steps past ``after`` (its last
    iteration): the run-end points of an interrupted or earlier reflex run. A continued run
    logs no running-series point where one already is, so no step appears twice."""
    taken: dict[int, set[str]] = {}
    for key in keys:
        for point in client.get_metric_history(run_id, key):
            if point.step > after:
                taken.setdefault(point.step, set()).add(key)
    return taken


def read_table(client: MlflowClient, run_id: str, name: str) -> list[dict[str, Any]]:
    """The rows of the run's table artifact ``name`` (none when the run has no such table)."""
    if not any(f.path == name for f in client.list_artifacts(run_id)):
        return []
    with tempfile.TemporaryDirectory() as tmp:
        local = client.download_artifacts(run_id, name, tmp)
        table = json.loads(Path(local).read_text(encoding="utf-8"))
    columns = table["columns"]
    return [dict(zip(columns, row, strict=True)) for row in table["data"]]


def _same(logged: float, value: float) -> bool:
    return logged == value or (math.isnan(logged) and math.isnan(value))
