"""A tracker that dies mid-run costs the run a bounded number of requests, and nothing is lost:
the run directory keeps everything and ``aevyra-reflex sync`` replays it into MLflow / W&B.

The dying tracker is a real ``mlflow server`` on 127.0.0.1, killed (its whole process group)
by a callback in the middle of the run.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mlflow import MlflowClient
from mlflow.utils import rest_utils
from test_resume import START, reasoner_variants
from test_tracker_names import Stores, builder, check_all_rows, wandb_env  # noqa: F401 - a fixture

from reflex.cli import build_cli
from reflex.testing import FakeModel
from reflex_mlflow import MLflowCallback


def sync(run_dir: Path, *options: str) -> str:
    args = ["sync", "--run-dir", str(run_dir), *options]
    [run] = list((run_dir / "runs").iterdir())
    done = CliRunner().invoke(build_cli(), [*args[:1], run.name, *args[1:]])
    assert done.exit_code == 0, done.output
    return str(done.output)


def test_sync_replays_a_run_made_without_trackers(
    tmp_path: Path, template_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(template_db, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    FakeModel(reasoner_variants).install()
    result = builder(tmp_path / "runs", "instructions").run(START)  # no tracker at all
    options = ["--mlflow-tracking-uri", uri, "--mlflow-log-prompts", "--wandb-mode", "offline"]
    output = sync(tmp_path / "runs", *options, "--wandb-log-prompts")
    assert "synced run" in output and "mlflow ui --backend-store-uri" in output
    saved = json.loads((Path(str(result.run_dir)) / ".trackers.json").read_text())
    dirs = [Path(d) for d in saved["wandb"]["sync_dirs"]]
    check_all_rows(Stores(uri, saved["mlflow"]["run_id"], dirs), result)
    # Again: the same tracker runs are continued and nothing is logged twice.
    sync(tmp_path / "runs", *options, "--wandb-log-prompts")
    again = json.loads((Path(str(result.run_dir)) / ".trackers.json").read_text())
    assert again["mlflow"]["run_id"] == saved["mlflow"]["run_id"]
    dirs = [Path(d) for d in again["wandb"]["sync_dirs"]]
    stores = Stores(uri, again["mlflow"]["run_id"], dirs)
    check_all_rows(stores, result)
    assert stores.steps("final_score_test") == [0]  # a one-off run-end number: step 0
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("aevyra-reflex")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert (
        len([r for r in runs if "reflex.evaluation" not in r.data.tags]) == 1
    )  # evaluation runs aside


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def mlflow_server(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    store = f"sqlite:///{tmp_path / 'server.db'}"
    command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", store]
    process = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):  # up to a few minutes on a busy machine
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("mlflow server did not start")
        yield base, process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def test_a_tracking_server_that_dies_mid_run(
    mlflow_server: tuple[str, subprocess.Popen[bytes]],
    tmp_path: Path,
    template_db: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    base, server = mlflow_server
    requests_after: list[dict[str, Any]] = []
    dead = False

    class KillTheServer:
        def on_iteration(self, record: Any) -> None:
            nonlocal dead
            if record.iteration == 2:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=30)
                dead = True

    real = rest_utils.http_request

    def counted(*args: Any, **kwargs: Any) -> Any:
        if dead:
            limits = {k: os.environ.get(k) for k in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES",)}
            requests_after.append({"endpoint": kwargs.get("endpoint"), **limits})
        return real(*args, **kwargs)

    monkeypatch.setattr(rest_utils, "http_request", counted)
    monkeypatch.chdir(tmp_path)
    FakeModel(reasoner_variants).install()
    callback = MLflowCallback(tracking_uri=base)
    with caplog.at_level(logging.WARNING):
        result = builder(tmp_path / "runs", "iterative").run(
            START, callbacks=[KillTheServer(), callback]
        )
    assert result.completed and result.final is not None and dead
    # Bounded: the breaker opens after two failed calls, each made without retries.
    assert 1 <= len(requests_after) <= MLflowCallback.breaker
    assert {r["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] for r in requests_after} == {"0"}
    messages = [r.getMessage() for r in caplog.records if "MLflow" in r.getMessage()]
    assert any("logging to it is off for the rest of the run" in m for m in messages)
    saved = json.loads((Path(str(result.run_dir)) / ".trackers.json").read_text())
    assert saved["mlflow"]["missed"] is True
    # Nothing lost: replay the run into a store that is up.
    shutil.copy(template_db, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setattr(rest_utils, "http_request", real)
    sync(tmp_path / "runs", "--mlflow-tracking-uri", uri, "--wandb-mode", "offline")
    after = json.loads((Path(str(result.run_dir)) / ".trackers.json").read_text())
    dirs = [Path(d) for d in after["wandb"]["sync_dirs"]]
    stores = Stores(uri, after["mlflow"]["run_id"], dirs)
    assert stores.steps("score_train") == [r.iteration for r in result.iterations]
    assert stores.run.data.metrics["final_score_test"] == result.final.mean_score
