"""What a continued MLflow run already holds (reflex_mlflow/history.py), read from a real sqlite
store with MlflowClient: the points a resume must not log twice, the steps an earlier run's end
took, and a table artifact read back."""

from __future__ import annotations

from pathlib import Path

from mlflow import MlflowClient

from reflex_mlflow.history import read_table, taken_steps, unlogged
from reflex_mlflow.views import write_table


def _run(uri: str) -> tuple[MlflowClient, str]:
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("history")
    return client, client.create_run(experiment).info.run_id


def test_a_point_logged_before_is_not_logged_again(uri: str) -> None:
    client, run_id = _run(uri)
    client.log_metric(run_id, "score_val", 0.5, step=1)
    client.log_metric(run_id, "cost_usd", float("nan"), step=1)
    wanted = {"score_val": 0.5, "cost_usd": float("nan"), "tokens": 90.0}
    assert unlogged(client, run_id, wanted, step=1) == {"tokens": 90.0}
    # Another value at a step that has one is kept: logged later, it becomes the latest.
    assert unlogged(client, run_id, {"score_val": 0.75}, step=1) == {"score_val": 0.75}
    assert unlogged(client, run_id, {"score_val": 0.5}, step=2) == {"score_val": 0.5}


def test_the_steps_past_the_last_iteration_are_an_earlier_run_s_end(uri: str) -> None:
    client, run_id = _run(uri)
    for step, key in ((2, "score_val"), (3, "score_val"), (3, "tokens"), (4, "tokens")):
        client.log_metric(run_id, key, 1.0, step=step)
    assert taken_steps(client, run_id, ["score_val", "tokens", "other"], after=2) == {
        3: {"score_val", "tokens"},
        4: {"tokens"},
    }


def test_a_table_artifact_reads_back_as_rows(uri: str, tmp_path: Path) -> None:
    client, run_id = _run(uri)
    assert read_table(client, run_id, "iterations.json") == []  # no such table yet
    rows = [{"iteration": 1, "prompt": "p1"}, {"iteration": 2, "prompt": "p2"}]
    write_table(client, run_id, "iterations.json", rows)
    assert read_table(client, run_id, "iterations.json") == rows
