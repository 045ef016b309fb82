"""The tasks of bench/quality.py: the shipped datasets it runs, and their seeded splits.

Each task names its file under examples/, the start prompt, its train / val / test sizes, the
hand-written reference prompt (or a label list built from the rows), its metric and, for issue
31's tasks, the metric's objective reported as the test figure and the response format sent.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
LABEL_FORMAT = "Answer with only the label, exactly as written, nothing else."

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class Task:
    name: str
    file: str
    start: str
    sizes: tuple[int, int, int]  # train, val, test
    max_tokens: int = 16
    labels: int | None = None  # keep the most frequent labels only
    reference: str | None = ""  # the hand-written prompt; "" builds a label-list one, None: none
    metric: str = "exact_match"
    options: tuple[tuple[str, str], ...] = ()  # the metric's options, (key, value) pairs
    objective: str | None = None  # the metric's objective reported as the test figure
    response_format: str | None = None  # a file under examples/ sent with every request
    stratify: bool = True  # by reference; False: a seeded shuffle (every reference differs)

    def rows(self) -> Rows:
        lines = (EXAMPLES / self.file).read_text(encoding="utf-8").splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
        if self.labels:
            counts: dict[str, int] = {}
            for row in rows:
                counts[row["ideal"]] = counts.get(row["ideal"], 0) + 1
            keep = set(sorted(counts, key=lambda k: (-counts[k], k))[: self.labels])
            rows = [r for r in rows if r["ideal"] in keep]
        return rows

    def hand_written(self, rows: Rows) -> str | None:
        if self.reference is None or self.reference:
            return self.reference
        labels = ", ".join(sorted({r["ideal"] for r in rows}))
        return f"{self.start} The answer is one of: {labels}. {LABEL_FORMAT}"


TASKS = {
    "intents7": Task(
        "intents7",
        "home_assistant_intents/dataset.jsonl",
        "Classify the intent.",
        (40, 40, 100),
        labels=7,
    ),
    "intents14": Task(
        "intents14", "home_assistant_intents/dataset.jsonl", "Classify the intent.", (40, 40, 100)
    ),
    "arithmetic": Task(
        "arithmetic",
        "arithmetic/dataset.jsonl",
        "Answer the question.",
        (40, 40, 100),
        reference="Answer the question. Answer with only the number, nothing else.",
    ),
    "acronyms": Task(
        "acronyms",
        "acronyms/dataset.jsonl",
        "Give the acronym.",
        (10, 10, 12),
        reference="Give the acronym: the capital letters of the phrase, in order, nothing else.",
    ),
    # Issue 31. Rows carry their own `tools`; the figure is the `exact` objective (the name and
    # every argument acceptable: BFCL's accuracy), the metric's partial credit beside it.
    "bfcl": Task(
        "bfcl",
        "tool_calls/dataset.jsonl",
        "Call the right function.",
        (20, 8, 20),
        max_tokens=150,
        reference=(
            "Call the right function. Answer with only the call, in exactly this form and "
            'nothing else, no code block: <tool_call>{"name": "<function name>", "arguments": '
            "{<every argument the request gives, by name>}}</tool_call>"
        ),
        metric="tool_call",
        options=(("strings", "bfcl"),),
        objective="exact",
        stratify=False,
    ),
    # Sent with the strict `json_schema` response format (the embedded model: a grammar); the
    # figure is json_match's `fields` (the share of reference leaves matched).
    "extraction": Task(
        "extraction",
        "extraction/dataset.jsonl",
        "Extract the quantities.",
        (30, 10, 25),
        max_tokens=120,
        reference=(
            "Extract every quantity in the sentence, in order: its value as a number (words and "
            "fractions as numbers) and its unit's full singular name (metre, not m or meters; "
            'dimensionless for a count without unit). No quantity: {"quantities": []}.'
        ),
        metric="json_match",
        options=(("schema", str(EXAMPLES / "extraction/response_format.json")),),
        objective="fields",
        response_format="extraction/response_format.json",
        stratify=False,
    ),
}


def stratified(
    rows: Rows, sizes: tuple[int, int, int], seed: int, by_reference: bool = True
) -> Rows:
    """``rows`` with a ``split`` field: labels interleaved after a seeded shuffle, then cut
    (``by_reference=False``: one group, a plain seeded shuffle)."""
    rng = random.Random(seed)
    groups: dict[str, Rows] = {}
    for row in sorted(rows, key=lambda r: r["id"]):
        groups.setdefault(row["ideal"] if by_reference else "", []).append(row)
    ranked: list[tuple[float, float, dict[str, Any]]] = []
    for members in groups.values():
        rng.shuffle(members)
        ranked += [
            ((i + rng.random()) / len(members), rng.random(), r) for i, r in enumerate(members)
        ]
    ordered = [r for _, _, r in sorted(ranked, key=lambda t: (t[0], t[1]))]
    train, val, test = sizes
    cut = {"train": ordered[:train], "val": ordered[train : train + val]}
    cut["test"] = ordered[train + val : train + val + test]
    return [{**r, "split": name} for name, part in cut.items() for r in part]
