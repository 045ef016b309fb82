"""What tracker adapters read from and keep in a run's directory (reflex/run/trackers.py), on the
files of a real run made against the fake model: ``.trackers.json``, the recorded iterations and
initial val score, the per-row view of the test split, and the replay ``sync`` makes.

The adapters' use of it is tested with them (test_mlflow_*, test_wandb_*, test_cli_sync.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import LABELS, make_rows
from test_engine import START

from reflex import ConfigurationError, OptimizationResult, PromptOptimizer, ReflexError
from reflex.config import RunConfig
from reflex.data.dataset import load_dataset
from reflex.run.trackers import (
    TRACKERS_FILE,
    evaluation_rows,
    recorded_initial_val,
    recorded_iterations,
    replay_run,
    run_path,
    save_tracker_state,
    tracker_state,
)
from reflex.testing import FakeModel, RecordingCallback


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in make_rows()), encoding="utf-8")
    return path


@pytest.fixture
def finished(fake_model: FakeModel, data: Path, tmp_path: Path) -> OptimizationResult:
    """A finished run of the dataset file (run.json names it), under ``tmp_path/.reflex``."""
    return (
        PromptOptimizer()
        .set_dataset(data)
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path / ".reflex")
        .run(START)
    )


def folder(result: OptimizationResult) -> Path:
    return Path(str(result.run_dir))


def read_json(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def first_right(example_id: str) -> bool:
    """Whether the fake task model answers the row right without the keyword (conftest)."""
    return int(example_id.removeprefix("r")) % 3 == 0


# --- .trackers.json ---------------------------------------------------------------------------


def test_each_tracker_keeps_its_own_entry_merged(tmp_path: Path) -> None:
    save_tracker_state(tmp_path, "mlflow", run_id="m1", experiment_id="7")
    save_tracker_state(tmp_path, "wandb", run_id="w1", sync_dirs=["a"])
    save_tracker_state(tmp_path, "mlflow", missed=True, run_id="m2")
    assert tracker_state(tmp_path, "mlflow") == {
        "run_id": "m2",
        "experiment_id": "7",
        "missed": True,
    }
    assert tracker_state(tmp_path, "wandb") == {"run_id": "w1", "sync_dirs": ["a"]}
    assert tracker_state(tmp_path, "neptune") == {}
    assert set(read_json(tmp_path / TRACKERS_FILE)) == {"mlflow", "wandb"}


def test_a_torn_or_foreign_trackers_file_reads_as_nothing_and_is_replaced(tmp_path: Path) -> None:
    for text in ("{oops", "[1, 2]", '{"mlflow": "not an entry"}'):
        (tmp_path / TRACKERS_FILE).write_text(text, encoding="utf-8")
        assert tracker_state(tmp_path, "mlflow") == {}, text
        save_tracker_state(tmp_path, "mlflow", run_id="m1")
        assert tracker_state(tmp_path, "mlflow") == {"run_id": "m1"}, text


def test_no_run_folder_yet_saves_nothing(tmp_path: Path) -> None:
    gone = tmp_path / "runs" / "not-made"
    save_tracker_state(gone, "mlflow", run_id="m1")
    save_tracker_state(None, "mlflow", run_id="m1")
    assert not gone.exists()
    assert tracker_state(gone, "mlflow") == {} and tracker_state(None, "mlflow") == {}


# --- what a run recorded ----------------------------------------------------------------------


def test_run_path_is_the_run_folder(finished: OptimizationResult) -> None:
    config = RunConfig.model_validate(read_json(folder(finished) / "config.json"))
    assert run_path(config) == folder(finished)
    assert run_path(config.model_copy(update={"run_id": None})) is None


def test_recorded_iterations_come_from_the_checkpoint_before_the_result(
    finished: OptimizationResult,
) -> None:
    run = folder(finished)
    assert [r.to_dict() for r in recorded_iterations(run)] == [
        r.to_dict() for r in finished.iterations
    ]
    assert len(finished.iterations) > 1
    checkpoint = read_json(run / "checkpoint.json")
    iterations = checkpoint["iterations"]
    assert isinstance(iterations, list)
    (run / "checkpoint.json").write_text(json.dumps({**checkpoint, "iterations": iterations[:1]}))
    assert [r.iteration for r in recorded_iterations(run)] == [1]  # what a killed run had
    (run / "checkpoint.json").unlink()
    assert len(recorded_iterations(run)) == len(finished.iterations)
    (run / "result.json").unlink()
    assert recorded_iterations(run) == [] and recorded_iterations(None) == []


def test_the_initial_val_score_is_the_seed_prompts_on_the_val_rows(
    finished: OptimizationResult,
) -> None:
    run = folder(finished)
    val = read_json(run / "splits.json")["val"]
    assert isinstance(val, list) and val
    assert recorded_initial_val(run) == pytest.approx(sum(map(first_right, val)) / len(val))


def test_the_initial_val_score_skips_torn_lines_and_other_events(tmp_path: Path) -> None:
    events = [
        {"type": "evaluation", "label": "test:baseline", "mean_score": 0.9},
        {"type": "note", "label": "val:baseline", "mean_score": 0.8},
        {"type": "evaluation", "label": "val:baseline", "mean_score": "n/a"},
    ]
    lines = [json.dumps(e) for e in events]
    lines.insert(1, '{"type": "evaluation", "label": "val:baseline", "mean_sc')  # cut by a kill
    (tmp_path / "events.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert recorded_initial_val(tmp_path) is None
    more = {"type": "evaluation", "label": "val:baseline", "mean_score": 0.25}
    with (tmp_path / "events.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps(more) + "\n")
    assert recorded_initial_val(tmp_path) == 0.25
    assert recorded_initial_val(tmp_path / "none") is None and recorded_initial_val(None) is None


# --- the per-row view of the test split -------------------------------------------------------


def test_evaluation_rows_put_baseline_and_final_side_by_side(
    finished: OptimizationResult,
) -> None:
    rows = evaluation_rows(finished)  # the rows reloaded from the file run.json names
    assert finished.final is not None
    assert [r["example_id"] for r in rows] == [s.example_id for s in finished.final.samples]
    truth = {row["id"]: row for row in make_rows()}
    for row in rows:
        source = truth[row["example_id"]]
        assert (row["input"], row["expected"]) == (source["input"], source["ideal"])
        assert row["final_output"] == source["ideal"] and row["final_score"] == 1.0
        right = first_right(row["example_id"])
        assert row["baseline_score"] == row["baseline_exact_match"] == (1.0 if right else 0.0)
        assert row["final_exact_match"] == 1.0
        assert (row["change"], row["changed"]) == (("same", False) if right else ("improved", True))
        assert row["baseline_output"] in (
            source["ideal"],
            f"I think this review is {source['ideal']}.",
        )
    assert {r["expected"] for r in rows} <= set(LABELS)


def test_evaluation_rows_without_the_dataset_file_keep_ids_and_scores(
    finished: OptimizationResult, data: Path
) -> None:
    dataset = load_dataset(data)
    data.unlink()
    rows = evaluation_rows(finished)
    assert rows and all(r["input"] == r["expected"] == "" for r in rows)
    assert [r["final_score"] for r in rows] == [1.0] * len(rows)
    given = evaluation_rows(finished, dataset)  # the caller's rows, when it has them
    assert all(r["input"].startswith("review ") for r in given)


# --- replay -----------------------------------------------------------------------------------


def test_replay_sends_the_recorded_hooks_as_a_resumed_run(finished: OptimizationResult) -> None:
    recorder = RecordingCallback()
    replayed = replay_run(folder(finished), [recorder])
    n = len(finished.iterations)
    assert recorder.hooks == [
        "on_run_start",
        "on_baseline",
        *["on_iteration"] * n,
        "on_final",
        "on_run_end",
    ]
    config, prompt = recorder.calls[0][1]
    assert isinstance(config, RunConfig) and prompt == START
    assert config.resumed is True and config.run_id == finished.run_id
    assert replayed.to_dict() == finished.to_dict()


def test_replay_of_an_unfinished_run_ends_in_its_error(finished: OptimizationResult) -> None:
    run = folder(finished)
    data = read_json(run / "result.json")
    unfinished = {**data, "completed": False, "stop_reason": "paused: the call budget is spent"}
    (run / "result.json").write_text(json.dumps(unfinished), encoding="utf-8")
    recorder = RecordingCallback()
    replay_run(run, [recorder])
    name, (error, partial) = recorder.calls[-1]
    assert name == "on_run_error" and "on_run_end" not in recorder.hooks
    assert isinstance(error, ReflexError) and str(error) == "paused: the call budget is spent"
    assert isinstance(partial, OptimizationResult) and partial.best_prompt == finished.best_prompt
    (run / "result.json").unlink()
    with pytest.raises(ConfigurationError, match=r"no config\.json/result\.json to replay"):
        replay_run(run, [recorder])
