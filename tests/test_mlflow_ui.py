"""The MLflow UI view users rely on, in headless Chromium: the run page shows the metric chart
and the per-example evaluation table.

Needs Debian's ``chromium`` (``.ci/chromium`` installs it in CI); skipped with the reason when
it is absent. ``mlflow server`` runs on 127.0.0.1 with one worker, in its own process group,
stopped whole at the end.
"""

from __future__ import annotations

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

import pytest
from mlflow import MlflowClient
from test_resume import START, builder, reasoner_variants

from reflex.testing import FakeModel
from reflex_mlflow import MLflowCallback

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get install chromium; CI runs .ci/chromium)",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def logged_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, str]:
    """(tracking URI, experiment id, run id) of a finished reflex run with a dataset file."""
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    data = tmp_path / "data.jsonl"
    from conftest import make_rows

    data.write_text("".join(__import__("json").dumps(r) + "\n" for r in make_rows(40)))
    FakeModel(reasoner_variants).install()
    callback = MLflowCallback(tracking_uri=uri)
    builder(tmp_path / "runs", "iterative").set_dataset(str(data)).run(START, callbacks=[callback])
    run = MlflowClient(tracking_uri=uri).get_run(str(callback.run_id))
    return uri, run.info.experiment_id, run.info.run_id


@pytest.fixture
def server(logged_run: tuple[str, str, str], tmp_path: Path) -> Iterator[str]:
    uri = logged_run[0]
    port = free_port()
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    mlflow = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri]
    process = subprocess.Popen(
        [*mlflow, "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "server.log", "wb"),  # noqa: SIM115 - closed with the process
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):  # up to ~2 minutes on a busy machine
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("mlflow server did not answer /health: " + _tail(tmp_path))
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the whole group: gunicorn/uvicorn workers too
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def _tail(tmp_path: Path) -> str:
    return (tmp_path / "server.log").read_text(errors="replace")[-2000:]


def rendered(url: str, tmp_path: Path, name: str) -> str:
    """The page's DOM after its scripts ran (and a screenshot beside it, for a human)."""
    assert CHROMIUM is not None
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1600,1400",
        "--virtual-time-budget=30000",
        "--run-all-compositor-stages-before-draw",  # lazily drawn charts are drawn
        f"--user-data-dir={tmp_path / 'chromium'}",
    ]
    subprocess.run(
        [CHROMIUM, *flags, f"--screenshot={tmp_path / (name + '.png')}", url],
        capture_output=True,
        timeout=180,
        check=False,
    )
    done = subprocess.run(
        [CHROMIUM, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=180
    )
    (tmp_path / f"{name}.html").write_text(done.stdout)
    return done.stdout


def test_the_run_page_shows_the_chart_and_the_per_example_table(
    server: str, logged_run: tuple[str, str, str], tmp_path: Path
) -> None:
    _, experiment, run = logged_run
    page = f"{server}/#/experiments/{experiment}/runs/{run}"
    metrics = rendered(f"{page}/model-metrics", tmp_path, "model-metrics")
    # the charts (alphabetical; those below the fold render when scrolled to)
    assert "best_score_train" in metrics
    assert "js-plotly-plot" in metrics  # a chart was drawn
    table = rendered(f"{page}/artifacts/evaluation.json", tmp_path, "evaluation")
    for column in ("input", "expected", "baseline_output", "final_output", "final_score"):
        assert column in table, column
    assert "review 0" in table or "review 1" in table  # a row's input, from the dataset
