"""A resumed run's ``splits.json`` must be the split the run started with.

``--resume`` read the train / val / test ids back from ``splits.json`` and trusted them: a file
whose train and test were swapped resumed with exit 0 and re-measured "test" on the old train
rows. The run now records its split when it starts (sizes and a sha256 of the ids, in
``run.json``), and a resume checks the file, before any call, against every record it has:

* that record (runs started since it was kept);
* the sealed record, ``record.sig.json`` (a paused or failed run was sealed at its end);
* ``evaluations.jsonl``: each logged row names the split its example was in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reflex.checks.audit import SEAL_FILE
from reflex.checks.isolation import EVALUATIONS_FILE
from reflex.data.dataset import SPLIT_NAMES

__all__ = ["SPLITS_FILE", "split_problem", "split_record"]

SPLITS_FILE = "splits.json"


def _sha(ids: Mapping[str, Sequence[str]]) -> str:
    canonical = json.dumps({k: list(ids.get(k) or []) for k in SPLIT_NAMES}, sort_keys=True)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def split_record(ids: Mapping[str, Sequence[str]]) -> dict[str, object]:
    """What run.json keeps of the split: its sizes and a sha256 of its ids."""
    return {"sizes": {k: len(ids.get(k) or []) for k in SPLIT_NAMES}, "sha256": _sha(ids)}


def _against_record(ids: Mapping[str, Sequence[str]], recorded: Mapping[str, Any]) -> str | None:
    sizes = recorded.get("sizes")
    if isinstance(sizes, dict):
        now = {k: len(ids.get(k) or []) for k in SPLIT_NAMES}
        changed = [
            f"{k} holds {now[k]} ids, {sizes.get(k)} at the start"
            for k in SPLIT_NAMES
            if now[k] != sizes.get(k)
        ]
        if changed:
            return "; ".join(changed) + " (run.json's split record)"
    if recorded.get("sha256") not in (None, _sha(ids)):
        return "its ids are not those the run started with (sha256 in run.json's split record)"
    return None


def _against_seal(path: Path) -> str | None:
    try:
        seal = json.loads((path / SEAL_FILE).read_text(encoding="utf-8"))
        sealed = seal["files"][SPLITS_FILE]["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # no seal (a killed run), or no usable entry: verify reports a bad seal
    data = (path / SPLITS_FILE).read_bytes()
    if hashlib.sha256(data).hexdigest() != sealed:
        return f"changed since the record was sealed ({SEAL_FILE})"
    return None


def _against_log(path: Path, ids: Mapping[str, Sequence[str]]) -> str | None:
    split_of = {i: name for name in SPLIT_NAMES for i in ids.get(name) or []}
    try:
        lines = (path / EVALUATIONS_FILE).read_bytes().splitlines()
    except FileNotFoundError:
        return None
    for number, line in enumerate(lines, start=1):
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a torn last line; the resume drops it
        if not isinstance(row, dict) or "split" not in row:
            continue
        example, logged = str(row.get("example_id")), row.get("split")
        if split_of.get(example) != logged:
            now = split_of.get(example) or "no split"
            return (
                f"example {example!r} was evaluated as {logged} ({EVALUATIONS_FILE}:{number}), "
                f"but the file puts it in {now}"
            )
    return None


def split_problem(
    path: Path, ids: Mapping[str, Sequence[str]], meta: Mapping[str, Any]
) -> str | None:
    """How run ``path``'s splits.json (parsed: ``ids``) differs from the run's records."""
    recorded = meta.get("splits")
    if isinstance(recorded, dict) and (problem := _against_record(ids, recorded)):
        return problem
    return _against_seal(path) or _against_log(path, ids)
