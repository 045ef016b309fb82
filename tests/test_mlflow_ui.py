"""The MLflow UI view users rely on, in headless Chromium: the run page shows the metric chart
and the per-example evaluation table.

Needs Debian's ``chromium`` (``.ci/chromium`` installs it in CI); skipped with the reason when
it is absent. ``mlflow server`` runs on 127.0.0.1 with one worker, in its own process group,
stopped whole at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import responder
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


@pytest.fixture(params=["iterative", "instructions"])
def strategy(request: pytest.FixtureRequest) -> str:
    """iterative: the reasoner proposes the keyword prompt, which answers every row right, so the
    final flips the baseline's wrong rows; instructions (with the fake model): no candidate beats
    the initial prompt, so the best val curve is the initial prompt's val score throughout."""
    return str(request.param)


@pytest.fixture
def logged_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, strategy: str
) -> tuple[str, str, str]:
    """(tracking URI, experiment id, run id) of a finished reflex run with a dataset file."""
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    data = tmp_path / "data.jsonl"
    from conftest import make_rows

    data.write_text("".join(__import__("json").dumps(r) + "\n" for r in make_rows(40)))
    FakeModel(responder if strategy == "iterative" else reasoner_variants).install()
    callback = MLflowCallback(tracking_uri=uri)
    builder(tmp_path / "runs", strategy).set_dataset(str(data)).run(START, callbacks=[callback])
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


def rendered(url: str, tmp_path: Path, name: str, height: int = 1400) -> str:
    """The page's DOM after its scripts ran (and a screenshot beside it, for a human).

    The run page draws a chart only once it is scrolled into view: ``height`` makes the window
    tall enough to hold them all."""
    assert CHROMIUM is not None
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size=1600,{height}",
        "--virtual-time-budget=30000",
        "--run-all-compositor-stages-before-draw",  # lazily drawn charts are drawn
        f"--user-data-dir={tmp_path / 'chromium'}",
    ]
    # The screenshot is for a human: a slow one on a loaded machine fails nothing.
    with contextlib.suppress(subprocess.TimeoutExpired):
        subprocess.run(
            [CHROMIUM, *flags, f"--screenshot={tmp_path / (name + '.png')}", url],
            capture_output=True,
            timeout=300,
            check=False,
        )
    # The DOM is what the tests read: the bound only turns a hang into a failure (a tall page
    # took over 180 s with both cores busy).
    done = subprocess.run(
        [CHROMIUM, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=900
    )
    (tmp_path / f"{name}.html").write_text(done.stdout)
    return done.stdout


def keep(screenshot: Path, name: str) -> None:
    """A screenshot for a human: into $REFLEX_UI_SCREENSHOTS as ``name`` when it is set (the
    docs' images come from there), else the temporary folder."""
    folder = Path(os.environ.get("REFLEX_UI_SCREENSHOTS") or tempfile.gettempdir())
    folder.mkdir(parents=True, exist_ok=True)
    if screenshot.is_file():
        shutil.copy(screenshot, folder / name)


RUN_END = {
    "best_score_train",
    "best_score_val",
    "total_iterations",
    "total_tokens",
    "total_cost_usd",
    "baseline_score",
    "final_score_test",
    "improvement",
    "improvement_pct",
    "p_value",
    "converged",
}


def drawn_charts(page: str) -> dict[str, tuple[str, int]]:
    """Metric key -> (``"bar"`` or ``"line"``, points drawn) for each chart the page drew: a card
    is titled by its ``<h4 title=KEY>``; plotly draws each bar and each line marker as a
    ``class="point"`` path (a line chart draws its markers twice, once faded: distinct
    positions are counted)."""
    parts = re.split(r'<h4 [^>]*title="([^"]+)"', page)
    charts = {}
    for key, body in zip(parts[1::2], parts[2::2], strict=True):
        if "js-plotly-plot" not in body:
            continue
        if "trace bars" in body:
            charts[key] = ("bar", body.count('class="point"'))
        else:
            spots = set(re.findall(r'<path class="point" transform="([^"]+)"', body))
            charts[key] = ("line", len(spots))
    return charts


def test_the_run_page_shows_the_chart_and_the_per_example_table(
    server: str, logged_run: tuple[str, str, str], tmp_path: Path
) -> None:
    uri, experiment, run = logged_run
    page = f"{server}/#/experiments/{experiment}/runs/{run}"
    metrics = rendered(f"{page}/model-metrics", tmp_path, "model-metrics", height=5000)
    charts = drawn_charts(metrics)
    logged = MlflowClient(tracking_uri=uri).get_run(run).data.metrics
    dots = sorted(key for key, (kind, points) in charts.items() if kind == "line" and points == 1)
    bars = sorted(key for key, (kind, _) in charts.items() if kind == "bar")
    print(f"{len(charts)} charts; bars {bars}; single-dot lines {dots}")  # -s shows it
    assert set(charts) == set(logged)  # one chart per metric, every one drawn
    # the run-end numbers: the running best and totals are curves, the one-off numbers bars
    assert [key for key in dots if key in RUN_END] == []
    assert charts["best_score_train"][0] == charts["total_tokens"][0] == "line"
    assert charts["total_tokens"][1] > 1
    assert charts["best_score_val"][0] == "line" and charts["best_score_val"][1] > 1
    assert charts["final_score_test"] == charts["baseline_score"] == ("bar", 1)
    table = rendered(f"{page}/artifacts/evaluation.json", tmp_path, "evaluation")
    for column in ("input", "expected", "baseline_output", "final_output", "final_score"):
        assert column in table, column
    assert "review 0" in table or "review 1" in table  # a row's input, from the dataset


def test_the_evaluation_view_lists_and_compares_the_test_rows(
    server: str, logged_run: tuple[str, str, str], tmp_path: Path, strategy: str
) -> None:
    """The final's evaluation run, compared to the baseline's (MLflow 3's evaluation view): every
    test row is listed with its request, both answers and both exact_match scores; under
    iterative the final flips rows, and the comparison shows the flipped row's two scores."""
    uri, experiment, run = logged_run
    client = MlflowClient(tracking_uri=uri)
    children = client.search_runs([experiment], f"tags.`mlflow.parentRunId` = '{run}'")
    runs = {r.data.tags.get("reflex.evaluation"): r.info.run_id for r in children}
    final, baseline = runs["test:final"], runs["test:baseline"]
    rows = client.search_traces(locations=[experiment], run_id=final, max_results=500)
    assert rows
    listed = rendered(f"{server}/#/experiments/{experiment}/runs/{final}/traces", tmp_path, "rows")
    assert all(json.loads(t.info.request_preview or "{}")["input"] in listed for t in rows)
    url = f"{server}/#/experiments/{experiment}/runs/{final}/traces?compareToRunUuid={baseline}"
    page = rendered(url, tmp_path, "evaluation-compare")
    if strategy == "iterative":  # the docs' images: the run whose final flips rows
        keep(tmp_path / "rows.png", "mlflow-evaluation-rows.png")
        keep(tmp_path / "evaluation-compare.png", "mlflow-evaluation-compare.png")
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    assert "compare to" in text and "test:baseline" in text and "exact_match" in text
    for trace in rows:
        request = json.loads(trace.info.request_preview or "{}")["input"]
        assert request in text, request  # each test row, paired with its baseline
    shown = set(re.findall(r"tr-[0-9a-f]{6,}", text))
    assert len(shown) == 2 * len(rows)  # the final's trace and the baseline's, on every row
    flipped = flipped_rows(client, experiment, baseline, final)
    assert bool(flipped) == (strategy == "iterative"), flipped
    for request, (before, after) in flipped.items():  # the row, then its two answers' scores
        shown_scores = re.search(re.escape(request) + r" .*?(\b[01]\b) .*?(\b[01]\b) ", text)
        assert shown_scores is not None, request
        assert {shown_scores.group(1), shown_scores.group(2)} == {str(before), str(after)}


def flipped_rows(
    client: MlflowClient, experiment: str, baseline: str, final: str
) -> dict[str, tuple[int, int]]:
    """Request -> (baseline score, final score) for each test row whose exact_match changed,
    read back from the two evaluation runs' traces and their assessments."""

    def scores(run: str) -> dict[str, int]:
        traces = client.search_traces(locations=[experiment], run_id=run, max_results=500)
        return {
            json.loads(t.info.request_preview or "{}")["input"]: int(
                next(a.value for a in t.info.assessments if a.name == "exact_match")
            )
            for t in traces
        }

    before, after = scores(baseline), scores(final)
    return {r: (before[r], after[r]) for r in after if before.get(r) != after[r]}
