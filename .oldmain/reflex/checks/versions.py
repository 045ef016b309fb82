"""Content-addressed prompt history: each accepted prompt as a version with its provenance.

A version's id is ``sha256(parent id + "\\n" + text)`` (16 hex digits), so the same text reached
by a different path is a different version, and an edited record cannot keep its ids. Each
version carries the reasoning that produced it, the scores that justified it, the sibling
candidates tried since its parent that were not accepted, and a unified diff against its parent.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping
from typing import Any

from reflex.data.json_types import JSONDict, JSONValue
from reflex.result import IterationRecord, OptimizationResult

__all__ = ["prompt_versions", "record_versions", "version_id"]


def version_id(parent: str | None, text: str) -> str:
    """The id of ``text`` derived from version ``parent`` (None for the initial prompt)."""
    return hashlib.sha256(f"{parent or ''}\n{text}".encode()).hexdigest()[:16]


def _diff(before: str, after: str, a: str, b: str) -> str:
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), a, b, lineterm="")
    return "\n".join(lines)


def _sibling(record: IterationRecord) -> JSONDict:
    return {
        "iteration": record.iteration,
        "score": record.score,
        "val_score": record.val_score,
        "verdict": record.failed or record.rejected or "not better on val",
    }


def prompt_versions(result: OptimizationResult) -> list[JSONDict]:
    """The initial prompt, then every prompt that became best-on-val, in order."""
    initial = result.initial_prompt
    root = version_id(None, initial)
    versions: list[JSONDict] = [
        {
            "id": root,
            "parent": None,
            "iteration": 0,
            "text": initial,
            "reasoning": "",
            "score": None,
            "val_score": None,
            "rejected_siblings": [],
            "diff": "",
        }
    ]
    parent, parent_text = root, initial
    siblings: list[JSONValue] = []
    for record in result.iterations:
        if not record.is_best:
            siblings.append(_sibling(record))
            continue
        vid = version_id(parent, record.system_prompt)
        versions.append(
            {
                "id": vid,
                "parent": parent,
                "iteration": record.iteration,
                "text": record.system_prompt,
                "reasoning": record.reasoning,
                "score": record.score,
                "val_score": record.val_score,
                "rejected_siblings": siblings,
                "diff": _diff(parent_text, record.system_prompt, parent, vid),
            }
        )
        parent, parent_text, siblings = vid, record.system_prompt, []
    return versions


def record_versions(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The versions of a ``result.json`` dict (initial first): its ``prompt_versions``, or, for
    a record written before that field, the same ids derived from its iterations."""
    stored = [v for v in result.get("prompt_versions") or [] if isinstance(v, Mapping)]
    if stored:
        return stored
    text = str(result.get("initial_prompt") or "")
    versions: list[Mapping[str, Any]] = [
        {"id": version_id(None, text), "iteration": 0, "text": text}
    ]
    for record in result.get("iterations") or []:
        if record.get("is_best"):
            text, parent = str(record.get("system_prompt") or ""), versions[-1]["id"]
            vid, iteration = version_id(parent, text), record.get("iteration")
            versions.append({"id": vid, "parent": parent, "iteration": iteration, "text": text})
    return versions
