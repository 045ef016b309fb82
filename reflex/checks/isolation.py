"""Proof from the record that the test split stayed held out (``aevyra-reflex verify``).

``evaluations.jsonl`` has one row per evaluated (example, model): its true split (from
splits.json), the evaluation's label, the prompt's id, the output, score, error and cache hit.
From it :func:`check_isolation` shows that every test row was evaluated exactly twice, under
``test:baseline`` with the initial prompt and ``test:final`` with the best prompt, and that no
other evaluation (selection on val included) touched a test row.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reflex.callbacks import EvalLabel

__all__ = ["EVALUATIONS_FILE", "Isolation", "check_isolation", "prompt_id_of"]

EVALUATIONS_FILE = "evaluations.jsonl"
TEST_LABELS = (str(EvalLabel("test", "baseline")), str(EvalLabel("test", "final")))


def _on_val(row: Mapping[str, Any]) -> bool:
    """Whether the row's evaluation was one on the val split (its label read back, typed)."""
    label = EvalLabel.parse(row.get("label", ""))
    return label is not None and label.split == "val"


def prompt_id_of(prompt: str) -> str:
    """A prompt's id in evaluations.jsonl: the first 16 hex digits of its text's sha256."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Isolation:
    """``ok``: True proven, False disproven (``line`` says how), None nothing to check."""

    ok: bool | None
    line: str


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def _rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        value = json.loads(line) if line.strip() else None
        if isinstance(value, dict):
            rows.append(value)
    return rows


def _test_problems(
    rows: Sequence[Mapping[str, Any]],
    test: set[str],
    prompts: Mapping[str, str | None],
    resumed: bool = False,
) -> list[str]:
    """What the log shows against the test split's isolation. A resumed run may log a row of
    an evaluation twice (the killed segment had logged part of it): the same label and prompt,
    so still exactly the two prompts; outside a resume a repeat is a problem."""
    problems = []
    on_test = [r for r in rows if r.get("example_id") in test]
    other = sorted({str(r.get("label")) for r in on_test} - set(TEST_LABELS))
    if other:
        problems.append(f"test rows were evaluated under {', '.join(other)}")
    for label, prompt in prompts.items():
        got = [r for r in on_test if r.get("label") == label]
        if prompt is None and not got:
            continue  # the run ended before its final
        counts = Counter((r.get("example_id"), r.get("model")) for r in got)
        repeated = any(n != 1 for n in counts.values()) and not resumed
        if {str(k[0]) for k in counts} != test or repeated:
            problems.append(f"{label} did not evaluate each test row exactly once")
        ids = {r.get("prompt_id") for r in got}
        if prompt is not None and ids != {prompt_id_of(prompt)}:
            problems.append(f"{label} evaluated prompt(s) {sorted(map(str, ids))}, not its own")
    return problems


def _resumed(run: Path) -> bool:
    """Whether the run was resumed (a ``resumed`` event in events.jsonl)."""
    path = run / "events.jsonl"
    if not path.is_file():
        return False
    return any('"type": "resumed"' in line for line in path.read_text("utf-8").splitlines())


def check_isolation(run: Path) -> Isolation:
    """Whether the run's per-row log proves the test split's isolation (see the module)."""
    log = run / EVALUATIONS_FILE
    if not log.is_file():
        return Isolation(None, f"no {EVALUATIONS_FILE} (recorded before the per-row log)")
    splits = _read(run / "splits.json") or {}
    result = _read(run / "result.json") or {}
    test, val = set(splits.get("test") or []), set(splits.get("val") or [])
    rows = _rows(log)
    final = result.get("best_prompt") if result.get("final") else None
    prompts = dict(zip(TEST_LABELS, (result.get("initial_prompt"), final), strict=True))
    problems = _test_problems(rows, test, prompts, _resumed(run))
    wrong = [r for r in rows if _on_val(r) and r.get("example_id") not in val]
    if wrong:
        problems.append(f"{len(wrong)} val evaluation rows are not val rows")
    named = {v: k for k, vs in splits.items() for v in vs} if isinstance(splits, dict) else {}
    if any(named.get(r.get("example_id")) != r.get("split") for r in rows):
        problems.append("rows name a split other than splits.json's")
    if problems:
        return Isolation(False, "test split NOT proven isolated: " + "; ".join(problems))
    vals = len({r.get("label") for r in rows if _on_val(r)})
    ends = "baseline and final prompts" if final is not None else "baseline prompt (no final)"
    times = "exactly twice" if final is not None else "exactly once"
    if _resumed(run):
        times = f"with {'exactly two prompts' if final is not None else 'one prompt'} (resumed)"
    return Isolation(
        True,
        f"test split isolated: {len(test)} test rows evaluated {times} ({ends}); selection "
        f"used val only ({vals} val evaluations, no test row)",
    )
