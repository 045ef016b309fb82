"""fewshot: demos from train only, one per label first, labels bootstrapped, zero-shot kept
when demos hurt (the shared task and builder: tests/test_reasoning_free.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from test_reasoning_free import (
    LABELS,
    ROWS,
    START,
    _index,
    _sent_demos,
    assert_improves,
    builder,
    task,
)

from reflex import OptimizationResult
from reflex.testing import FakeModel, FakeRequest

INPUT_TO_ID = {row["input"]: row["id"] for row in ROWS}


def needs_demos(request: FakeRequest) -> bool:
    return _sent_demos(request)


def demo_inputs(prompt: str) -> list[str]:
    section = re.split(r"^Examples(?: \(as chat turns\))?:\n", prompt, flags=re.MULTILINE)[1]
    return re.findall(r"^Input: (.*)$", section, flags=re.MULTILINE)


def test_fewshot_improves_and_demos_come_only_from_train(tmp_path: Path) -> None:
    FakeModel(task(needs_demos)).install()
    result = builder(tmp_path, "fewshot", max_demos=2, cover_labels=0).run(START)
    assert_improves(result)
    splits = json.loads(Path(str(result.run_dir), "splits.json").read_text())
    inputs = demo_inputs(result.best_prompt)
    assert 1 <= len(inputs) <= 2
    assert {INPUT_TO_ID[text] for text in inputs} <= set(splits["train"])
    for record in result.iterations:  # every candidate, not only the winner
        ids = {INPUT_TO_ID[text] for text in demo_inputs(record.system_prompt)}
        assert ids and ids <= set(splits["train"])


def test_fewshot_first_shows_one_demo_per_label(tmp_path: Path) -> None:
    # Issue 17: a 2-demo set cannot show 3 labels; the first candidate covers every label.
    FakeModel(task(needs_demos)).install()
    result = builder(tmp_path, "fewshot", max_demos=2).run(START)
    first = result.iterations[0].system_prompt
    outputs = re.findall(r"^Output: (.*)$", first, flags=re.MULTILINE)
    assert sorted(outputs) == LABELS
    assert [len(demo_inputs(r.system_prompt)) for r in result.iterations[1:3]] == [2, 1]


def pool_event(result: OptimizationResult) -> dict[str, Any]:
    events = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    [pool] = [e for e in map(json.loads, events) if e["type"] == "fewshot_pool"]
    return pool


def test_fewshot_bootstraps_only_when_some_train_rows_lack_a_reference(tmp_path: Path) -> None:
    # Issue 17: preferring demos the prompt already gets right cost test accuracy on the intent
    # tasks; with references on every train row the default pool is the references (no calls).
    FakeModel(task(needs_demos)).install()
    labelled = builder(tmp_path / "a", "fewshot").run(START)
    assert pool_event(labelled)["source"] == "labels"
    rows = [dict(r, ideal=None) if i % 5 == 0 else r for i, r in enumerate(ROWS)]
    partial = builder(tmp_path / "b", "fewshot").set_dataset(rows).run(START)
    assert pool_event(partial)["source"] == "bootstrap" and pool_event(partial)["bootstrapped"]
    # The bootstrap is one 16-row train evaluation (the others are 8-row train scores).
    assert [16 in train_sizes(r) for r in (labelled, partial)] == [False, True]


def train_sizes(result: OptimizationResult) -> set[int]:
    events = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    labels = [e for e in map(json.loads, events) if e.get("label", "").startswith("train:it")]
    return {e["examples"] for e in labels}


def test_fewshot_keeps_zero_shot_when_demos_hurt(tmp_path: Path) -> None:
    FakeModel(task(lambda r: not _sent_demos(r) and _index(r) % 2 == 0)).install()
    result = builder(tmp_path, "fewshot", demo_source="labels").run(START)
    assert result.best_prompt == START
    assert result.iterations and not any(r.accepted or r.is_best for r in result.iterations)


def two_demos(request: FakeRequest) -> bool:
    return request.system.count("\nOutput: ") >= 2  # demos in the system prompt


def test_fewshot_races_its_demo_draws_under_race(tmp_path: Path) -> None:
    # Issue 33, item 2: the demo sets are raced on growing val rungs; a 1-demo set (wrong on
    # most rows here) is dropped before all the val rows and its calls stop at its rung.
    fake = FakeModel(task(two_demos)).install()
    opt = builder(tmp_path, "fewshot", cover_labels=0, demo_format="system").set_race()
    result = opt.run(START)
    assert result.iterations and all(r.race is not None for r in result.iterations)
    dropped = [r for r in result.iterations if r.race and r.race["dropped"]]
    assert dropped and all(r.val_score is None and not r.is_best for r in dropped)
    splits = json.loads(Path(str(result.run_dir), "splits.json").read_text())
    val_inputs = {row["input"] for row in ROWS if row["id"] in splits["val"]}
    for record in dropped:
        assert record.race is not None and record.race["rung"] < record.race["rungs"]
        sent = [r for r in fake.requests if r.system == record.system_prompt]
        assert len([r for r in sent if r.user in val_inputs]) == len(record.race["rows"])
    assert result.best_prompt.count("\nOutput: ") >= 2
    assert result.best_score_val == 1.0
