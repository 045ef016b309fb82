"""Reasoning-model prompts and the robust parsing of their answers.

Answers are expected as tagged sections (``<prompt>...</prompt>``). We also accept a JSON object
with the same keys and, as a last resort, a fenced code block, because real models drift.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Proposal", "ProposalError", "parse_proposal", "tagged"]


class ProposalError(ValueError):
    """The reasoning model's answer had no usable prompt; the message says why."""


@dataclass(frozen=True)
class Proposal:
    prompt: str
    diagnosis: str = ""
    edit: str = ""


def tagged(text: str, tag: str) -> str | None:
    """Content of the last ``<tag>...</tag>`` in ``text`` (tolerates a missing close tag)."""
    matches = re.findall(rf"<{tag}>\s*(.*?)\s*</{tag}>", text, flags=re.S | re.I)
    if matches:
        return str(matches[-1]).strip()
    opened = re.search(rf"<{tag}>\s*(.*)$", text, flags=re.S | re.I)
    return opened.group(1).strip() if opened else None


def _from_json(text: str) -> dict[str, str] | None:
    match = re.search(r"\{.*\}", text, flags=re.S)
    if not match:
        return None
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else None


def _from_fence(text: str) -> str | None:
    blocks = re.findall(r"```[a-zA-Z]*\n(.*?)```", text, flags=re.S)
    return blocks[-1].strip() if blocks else None


def parse_proposal(text: str, *, current: str, forbidden: Sequence[str] = ()) -> Proposal:
    """Extract a revised prompt; raise ProposalError when it is missing, empty or unchanged."""
    data = _from_json(text) if tagged(text, "prompt") is None else None
    prompt = tagged(text, "prompt") or (data or {}).get("prompt") or _from_fence(text)
    if not prompt or not prompt.strip():
        raise ProposalError("no revised prompt found: put it between <prompt> and </prompt>")
    prompt = prompt.strip()
    if prompt == current.strip():
        raise ProposalError("the revised prompt is identical to the current one")
    for text_seen in forbidden:
        if text_seen and text_seen.strip() == prompt:
            raise ProposalError("the revised prompt repeats one that was already tried")
    diagnosis = tagged(text, "diagnosis") or (data or {}).get("diagnosis", "")
    edit = tagged(text, "edit") or (data or {}).get("edit", "")
    return Proposal(prompt=prompt, diagnosis=diagnosis, edit=edit)
