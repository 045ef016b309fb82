"""The guarded MLflow run (``reflex_mlflow.base.MLflowRun``): a guarded action says whether it
landed, failures count toward the breaker, HTTP stores get request limits and local ones none,
and a continued run keeps the params it has."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

from mlflow import MlflowClient

from reflex_mlflow.base import MLflowRun


class Probe(MLflowRun):
    def __init__(self, client: MlflowClient | None, run_id: str | None) -> None:
        self.client, self.run_id = client, run_id


def refuse() -> None:
    raise ConnectionError("Connection refused")


def test_attempt_says_whether_it_landed_and_the_breaker_opens(tmp_path: Path) -> None:
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    probe = Probe(client, client.create_run(client.create_experiment("e")).info.run_id)
    assert probe._attempt("on_final", lambda: None) is True
    assert probe._attempt("on_final", refuse) is False and not probe._off
    assert probe._attempt("on_final", refuse) is False and probe._off  # two outages in a row
    assert probe._attempt("on_final", lambda: None) is False  # off: nothing runs any more
    assert len(probe.missed()) == 3


def test_request_limits_only_for_an_http_store() -> None:
    probe = Probe(None, None)
    probe.tracking_uri = "sqlite:///x.db"
    assert isinstance(probe._request_limits(), nullcontext) and not probe._is_http()
    probe.tracking_uri = "http://127.0.0.1:5000"
    assert probe._is_http() and not isinstance(probe._request_limits(), nullcontext)


def test_a_continued_run_keeps_its_params(tmp_path: Path) -> None:
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    run_id = client.create_run(client.create_experiment("e")).info.run_id
    probe = Probe(client, run_id)
    probe._log_params({"seed": 0})
    probe._resume = True
    probe._log_params({"seed": 1, "strategy": "iterative"})
    assert client.get_run(run_id).data.params == {"seed": "0", "strategy": "iterative"}
