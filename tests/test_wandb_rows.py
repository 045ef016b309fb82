"""W&B per-row tables: the baseline's and the final's test rows as the summary tables
``rows_baseline`` and ``rows_final`` (one schema, so W&B compares them across runs) with the
``change``/``changed`` columns, and the ``evaluation`` table with them too; read back from the
offline run's files on disk."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows
from test_engine import START, builder
from wandb_reader import load_run

from reflex import load_dataset
from reflex.testing import FakeModel
from reflex_wandb import WandbCallback
from reflex_wandb.callback import side_rows

wandb = pytest.importorskip("wandb")


@pytest.fixture
def wandb_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_ERROR_REPORTING", "false")
    yield
    wandb.teardown()


def table(sync_dir: str, entry: dict[str, Any]) -> list[dict[str, Any]]:
    assert entry["_type"] == "table-file"
    (path,) = Path(sync_dir).rglob(Path(entry["path"]).name)
    data = json.loads(path.read_text(encoding="utf-8"))
    return [dict(zip(data["columns"], values, strict=True)) for values in data["data"]]


def test_rows_of_each_side_with_what_changed(
    fake_model: FakeModel, tmp_path: Path, wandb_env: None
) -> None:
    callback = WandbCallback(mode="offline")
    dataset = load_dataset(make_rows(), name="reviews")
    result = builder(tmp_path).set_dataset(dataset).run(START, callbacks=[callback])
    assert callback.run is not None and result.baseline is not None and result.final is not None
    sync_dir = callback.run.settings.sync_dir
    wandb.teardown()
    summary = load_run(sync_dir)["summary"]
    base = {s.key: s for s in result.baseline.samples}
    for side, snapshot in (("baseline", result.baseline), ("final", result.final)):
        rows = table(sync_dir, summary[f"rows_{side}"])
        assert [r["example_id"] for r in rows] == [s.example_id for s in result.final.samples]
        samples = {s.example_id: s for s in snapshot.samples}
        for row in rows:
            sample = samples[row["example_id"]]
            assert (row["output"], row["score"]) == (sample.output, sample.score)
            assert row["exact_match"] == sample.scores["exact_match"]
            before = base[f"{row['example_id']}@fake/task"].score
            after = next(s.score for s in result.final.samples if s.example_id == row["example_id"])
            assert row["changed"] == (before != after)
            assert row["change"] == (
                "same" if before == after else "improved" if after > before else "regressed"
            )
        assert set(rows[0]) == {
            "example_id",
            "model",
            "input",
            "expected",
            "output",
            "score",
            "exact_match",
            "change",
            "changed",
        }
    flipped = [r for r in table(sync_dir, summary["rows_final"]) if r["changed"]]
    assert flipped and all(r["change"] == "improved" for r in flipped)
    # the one table with both sides, logged at the final's step (nested keys read as a.b)
    entry = {k.split(".", 1)[1]: v for k, v in summary.items() if k.startswith("evaluation.")}
    evaluation = table(sync_dir, entry)
    assert sum(r["changed"] for r in evaluation) == len(flipped)


def test_side_rows_drop_the_other_side() -> None:
    row = {
        "example_id": "r1",
        "model": "m",
        "input": "i",
        "expected": "e",
        "baseline_output": "a",
        "final_output": "b",
        "baseline_score": 0.0,
        "final_score": 1.0,
        "baseline_f1": 0.2,
        "final_f1": 0.9,
        "change": "improved",
        "changed": True,
    }
    assert side_rows([row], "final") == [
        {
            "example_id": "r1",
            "model": "m",
            "input": "i",
            "expected": "e",
            "output": "b",
            "score": 1.0,
            "f1": 0.9,
            "change": "improved",
            "changed": True,
        }
    ]
