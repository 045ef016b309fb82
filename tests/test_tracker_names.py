"""Every row of docs/trackers.md's name table, for every built-in strategy, in real stores.

MLflow: a real sqlite store read back with MlflowClient. W&B: a real offline run read back from
its ``.wandb`` file. Also after a kill -9 in the middle of an iteration and ``--resume``: one
MLflow run and one W&B run id, every step exactly once.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import wandb
from mlflow import MlflowClient
from test_resume import START, STRATEGIES, reasoner_variants
from test_resume import builder as unpriced_builder
from wandb_reader import load_run

from reflex import OptimizationResult, PromptOptimizer
from reflex.testing import FakeModel
from reflex_mlflow import MLflowCallback
from reflex_wandb import WandbCallback

DOCS = Path(__file__).resolve().parents[1] / "docs" / "trackers.md"
TESTS = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Row:
    names: tuple[str, ...]
    when: str
    mlflow: str
    wandb: str


def doc_rows() -> list[Row]:
    """The table under "Every name, and where it lands" in docs/trackers.md."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("**Every name, and where it lands.**") :]
    lines = [line for line in section.splitlines()[1:] if line.startswith("| `")]
    rows = []
    for line in lines:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) != 4:
            break
        names = tuple(re.findall(r"`([^`]+)`", cells[0]))
        rows.append(Row(names, cells[1], cells[2], cells[3]))
    return rows


ROWS = doc_rows()


def builder(run_dir: Path, strategy: str) -> PromptOptimizer:
    """test_resume's run with both fake models priced, so every cost name has a value (an
    unpriced run logs no cost: it is unknown, not 0)."""
    return (
        unpriced_builder(run_dir, strategy)
        .set_price("fake/task", 1.0, 2.0)
        .set_price("fake/reasoner", 3.0, 4.0)
    )


def test_the_table_is_complete() -> None:
    names = {name for row in ROWS for name in row.names}
    reference = {  # every name the callbacks reference documents (callbacks-reference)
        "strategy",
        "reasoning_model",
        "max_iterations",
        "score_threshold",
        "temperature",
        "max_workers",
        "target_model",
        "target_source",
        "score_test",
        "score_train",
        "score_val",
        "score_<metric>",
        "iterations.json",
        "best_score_train",
        "baseline_score",
        "final_score_test",
        "improvement",
        "improvement_pct",
        "converged",
        "total_iterations",
        "best-prompt",
        "prompts",
    }
    assert reference <= names, reference - names
    assert "best_score_val" in names and "evaluation.json" in names


@pytest.fixture(scope="module", autouse=True)
def wandb_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    root = tmp_path_factory.mktemp("wandb-home")
    with pytest.MonkeyPatch.context() as mp:
        for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
            mp.setenv(name, str(root / name.lower()))
        mp.setenv("WANDB_SILENT", "true")
        mp.setenv("WANDB_ERROR_REPORTING", "false")
        yield


def concrete(name: str, result: OptimizationResult) -> str:
    return (
        name.replace("<metric>", "exact_match")
        .replace("<reflex run id>", str(result.run_id))
        .replace("NNN", "001")
    )


class Stores:
    """What one reflex run left in MLflow and in W&B."""

    def __init__(self, uri: str, mlflow_run_id: str, wandb_dirs: list[Path]) -> None:
        self.client = MlflowClient(tracking_uri=uri)
        self.run = self.client.get_run(mlflow_run_id)
        self.files = self._artifacts(None)
        wandb.teardown()  # flush the .wandb files before reading them
        runs = [load_run(str(d)) for d in sorted(wandb_dirs)]
        # each dir's run-<id>.wandb (its name may end in "-1": the same id started twice in
        # one second, e.g. an interrupted run and its resume)
        self.wandb_ids = {f.stem[4:] for d in wandb_dirs for f in Path(d).glob("run-*.wandb")}
        self.history = [row for run in runs for row in run["history"]]
        self.summary = {k: v for run in runs for k, v in run["summary"].items()}
        self.config = {k: v for run in runs for k, v in run["config"].items()}
        self.artifacts = {a["name"] for run in runs for a in run["artifacts"]}

    def _artifacts(self, path: str | None) -> set[str]:
        found: set[str] = set()
        for info in self.client.list_artifacts(self.run.info.run_id, path):
            found |= self._artifacts(info.path) if info.is_dir else {info.path}
        return found

    def steps(self, name: str) -> list[int]:
        return [m.step for m in self.client.get_metric_history(self.run.info.run_id, name)]

    def wandb_steps(self, name: str) -> list[int]:
        # a table is logged as nested keys (``prompts._type``, ``prompts.path``, ...)
        return [row["iteration"] for row in self.history if name in row or f"{name}._type" in row]


SERIES = (
    "best_score_train",
    "best_score_val",
    "total_iterations",
    "total_tokens",
    "total_cost_usd",
)


def initial_val(result: OptimizationResult) -> float | None:
    """The initial prompt's val score, from the run's events.jsonl (the ``val:baseline``
    evaluation); None for a run with no val split."""
    lines = (Path(str(result.run_dir)) / "events.jsonl").read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines if line.strip()]
    scores = [
        e["mean_score"]
        for e in events
        if e["type"] == "evaluation" and e.get("label") == "val:baseline"
    ]
    assert len(scores) <= 1, scores  # measured once, even across a kill and a resume
    return scores[0] if scores else None


def running_values(name: str, result: OptimizationResult) -> dict[int, float]:
    """Iteration -> the value a run-end series has after it (the running best or total).
    The running best val starts at the initial prompt's val score: the best prompt before any
    candidate beat it."""
    values: dict[int, float] = {}
    best = initial_val(result) if name == "best_score_val" else None
    for count, record in enumerate(result.iterations, start=1):
        if name == "best_score_train" and record.score is not None:
            best = record.score if best is None else max(best, record.score)
        if name == "best_score_val" and record.is_best:
            best = record.val_score if record.val_score is not None else record.score
        value = {
            "total_iterations": float(count),
            "total_tokens": float(record.tokens),
            "total_cost_usd": record.cost,
        }.get(name, best)
        if value is not None:
            values[record.iteration] = value
    return values


def run_end_values(result: OptimizationResult) -> dict[str, float | None]:
    """The documented run-end numbers, from the result (not from the code that logs them)."""
    total = result.usage["total"]
    return {
        "best_score_train": result.best_score,
        "best_score_val": result.best_score_val,
        "total_iterations": float(len(result.iterations)),
        "total_tokens": float(total["tokens"]),
        "total_cost_usd": float(total["cost"]),
        "baseline_score": result.baseline.mean_score if result.baseline else None,
        "final_score_test": result.final.mean_score if result.final else None,
        "improvement": result.improvement,
        "p_value": result.p_value,
    }


#: Each race_* name and the IterationRecord.race fact it comes from (None: always there).
RACE_FACTS = {
    "race_rung": None,
    "race_rows": None,
    "race_dropped": None,
    "race_score": "score",
    "race_leader_score": "leader_score",
    "race_p": "p",
}


def expected_steps(name: str, result: OptimizationResult) -> list[int]:
    """The iterations at which a per-iteration series has a point."""
    if name in RACE_FACTS:  # every raced candidate (--race), where its fact is known
        fact = RACE_FACTS[name]
        return [
            r.iteration
            for r in result.iterations
            if r.race is not None and (fact is None or r.race.get(fact) is not None)
        ]
    if name in SERIES:
        return list(running_values(name, result))
    if name == "score_val":
        return [r.iteration for r in result.iterations if r.val_score is not None]
    if name in ("tokens", "cost_usd", "prompts"):
        return [r.iteration for r in result.iterations]
    # score_train and score_<metric>: every iteration with a train score (all that did not fail,
    # but a mipro trial or a raced candidate dropped on a val rung, measured on val rows only)
    return [r.iteration for r in result.iterations if r.score is not None]


def check_mlflow(row: Row, name: str, stores: Stores, result: OptimizationResult) -> None:
    where, data = row.mlflow, stores.run.data
    last = len(result.iterations)
    if where == "param":
        assert name in data.params
    elif where == "tag":
        assert name in data.tags
    elif where.startswith("metric at step 0"):
        assert 0 in stores.steps(name)
    elif where.startswith("metric at step N+1"):
        assert last + 1 in stores.steps(name), (name, stores.steps(name))
    elif where == "metric at each iteration":
        steps = stores.steps(name)
        if name == "score_val" and initial_val(result) is not None:  # and the baseline at 0
            steps = [step for step in steps if step != 0]
        assert steps == expected_steps(name, result)
    elif where == "metric at each iteration, and at step N+1":
        assert stores.steps(name) == [*expected_steps(name, result), last + 1]
    elif where == "metric at each iteration from the first train score, and at step N+1":
        # the documented exception: a run with no train score logs no point at all
        steps = expected_steps(name, result)
        assert stores.steps(name) == ([*steps, last + 1] if steps else [])
    elif where in ("artifact", "table artifact"):
        assert name in stores.files
        if where == "table artifact":
            logged = json.loads(data.tags["mlflow.loggedArtifacts"])
            assert {"path": name, "type": "table"} in logged
    else:
        assert where == "-", f"unknown MLflow place {where!r}"


def check_wandb(row: Row, name: str, stores: Stores, result: OptimizationResult) -> None:
    where = row.wandb
    last = len(result.iterations)
    if where == "config":
        assert name in stores.config
    elif where == "summary":
        assert name in stores.summary
    elif where == "history at iteration 0":
        assert 0 in stores.wandb_steps(name)
    elif where == "history at iteration N+1":
        assert last + 1 in stores.wandb_steps(name)
    elif where in ("history at each iteration", "table at each iteration"):
        steps = [s for s in stores.wandb_steps(name) if 0 < s <= last]
        assert steps == expected_steps(name, result), (name, steps)
    elif where == "history at each iteration, and summary":
        assert [s for s in stores.wandb_steps(name) if 0 < s <= last] == expected_steps(
            name, result
        )
        assert name in stores.summary
    elif where == "history at each iteration from the first train score, and summary":
        steps = expected_steps(name, result)  # none at all in a run with no train score
        assert [s for s in stores.wandb_steps(name) if 0 < s <= last] == steps
        assert (name in stores.summary) is bool(steps)
    elif where == "artifact":
        assert name in stores.artifacts
    else:
        assert where == "-", f"unknown W&B place {where!r}"


def check_run_end_numbers(stores: Stores, result: OptimizationResult) -> None:
    """Each run-end number is the latest MLflow value and the W&B summary; each series holds
    the running value at every iteration, then the run-end number; the one-off numbers are at
    step 0 only (a bar in the UI); no run-end number is a single-dot line chart."""
    client, run_id = stores.client, stores.run.info.run_id
    for name, value in run_end_values(result).items():
        if value is None:
            continue
        assert stores.run.data.metrics[name] == pytest.approx(value), name
        assert stores.summary[name] == pytest.approx(value), name
        history = client.get_metric_history(run_id, name)
        if name not in SERIES:
            assert [m.step for m in history] == [0], name
            continue
        points = {m.step: m.value for m in history}
        assert len(points) == len(history), (name, history)  # no step twice
        # a series of a point per iteration, then the run-end point: best_score_val too when
        # no candidate beat the initial prompt (the running best is then its val score)
        running = running_values(name, result)
        assert len(history) == len(running) + 1 > 1, (name, history)
        if name == "best_score_val" and initial_val(result) is not None:
            assert list(running) == [r.iteration for r in result.iterations], name
        assert points.pop(len(result.iterations) + 1) == pytest.approx(value), name
        assert points == pytest.approx(running), name
        rows = [row for row in stores.history if name in row]
        assert {row["iteration"]: row[name] for row in rows} == pytest.approx(points), name
    run_end = {*run_end_values(result), "improvement_pct", "converged"}
    assert [key for key in single_dot_charts(stores) if key in run_end] == []


def single_dot_charts(stores: Stores) -> list[str]:
    """The run page draws a metric whose latest step is >= 1 as a line, at step 0 as a bar
    (MLflow 3's RunsChartsCardConfig.getBaseChartAndSectionConfigs): a line of one point is a
    dot."""
    client, run_id = stores.client, stores.run.info.run_id
    return sorted(
        key
        for key in stores.run.data.metrics
        if len(history := client.get_metric_history(run_id, key)) == 1 and history[0].step >= 1
    )


def check_initial_val(stores: Stores, result: OptimizationResult) -> None:
    """The initial prompt's val score is the val curve's point at step 0, once, in both."""
    score = initial_val(result)
    history = stores.client.get_metric_history(stores.run.info.run_id, "score_val")
    rows = [row for row in stores.history if "score_val" in row and row["iteration"] == 0]
    if score is None:
        assert 0 not in [m.step for m in history] and rows == []
        return
    assert [m.value for m in history if m.step == 0] == [score]
    assert [row["score_val"] for row in rows] == [score]


def check_all_rows(stores: Stores, result: OptimizationResult) -> None:
    check_run_end_numbers(stores, result)
    check_initial_val(stores, result)
    failures = []
    for row in ROWS:
        for raw in row.names:
            name = concrete(raw, result)
            for check in (check_mlflow, check_wandb):
                try:
                    check(row, name, stores, result)
                except AssertionError as exc:
                    failures.append(f"{check.__name__} {name!r} ({row.when}): {exc}")
    assert failures == []


def fresh_uri(template_db: Path, where: Path) -> str:
    where.mkdir(parents=True, exist_ok=True)
    shutil.copy(template_db, where / "mlflow.db")
    return f"sqlite:///{where / 'mlflow.db'}"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_documented_name_lands_where_the_table_says(
    strategy: str, tmp_path: Path, template_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # MLflow artifacts land in tmp_path/mlruns
    uri = fresh_uri(template_db, tmp_path)
    FakeModel(reasoner_variants).install()
    mlflow_cb = MLflowCallback(tracking_uri=uri, log_prompt_each_iter=True)
    wandb_cb = WandbCallback(mode="offline", dir=str(tmp_path), log_prompt_each_iter=True)
    result = builder(tmp_path / "runs", strategy).run(START, callbacks=[mlflow_cb, wandb_cb])
    assert result.completed and result.iterations
    # every iteration that did not fail has a train score, whatever the strategy (a mipro trial
    # or a raced candidate dropped on a val rung is rejected unscored on train)
    unscored = [r for r in result.iterations if r.race or (r.lineage and "trial" in r.lineage[0])]
    assert all(
        r.score is not None for r in result.iterations if r.failed is None and r not in unscored
    )
    trained = [r.score for r in result.iterations if r.score is not None]
    assert not trained or result.best_score == max(trained)
    sync_dir = Path(wandb_cb.run.settings.sync_dir)
    stores = Stores(uri, str(mlflow_cb.run_id), [sync_dir])
    last = len(result.iterations) + 1
    check_all_rows(stores, result)
    metrics = stores.run.data.metrics
    # absent in a run with no train score (a val-only search), as the table says
    assert metrics.get("best_score_train") == result.best_score
    assert metrics["best_score_val"] == result.best_score_val
    assert stores.summary["best_score_val"] == result.best_score_val
    # a curve even when no candidate beat the initial prompt (typical of instructions, fewshot)
    assert stores.steps("best_score_val") == [*(r.iteration for r in result.iterations), last]
    assert stores.wandb_steps("best_score_val")[: len(result.iterations)] == [
        r.iteration for r in result.iterations
    ]


KILLED_RUN = """
import os, signal, sys
sys.path[:0] = [{tests!r}]
from pathlib import Path
from test_tracker_names import START, builder, reasoner_variants
from reflex.testing import FakeModel
from reflex_mlflow import MLflowCallback
from reflex_wandb import WandbCallback

class KillMidIteration:
    # kill -9 after iteration {at} is recorded (checkpoint written) but before the trackers
    # hear of it: the iteration in flight at the kill
    def on_iteration(self, record):
        if record.iteration == {at}:
            os.kill(os.getpid(), signal.SIGKILL)

FakeModel(reasoner_variants).install()
builder(Path({run_dir!r}), {strategy!r}).run(START, callbacks=[
    KillMidIteration(),
    MLflowCallback(tracking_uri={uri!r}, log_prompt_each_iter=True),
    WandbCallback(mode="offline", dir={wandb_dir!r}, log_prompt_each_iter=True),
])
"""


@pytest.mark.parametrize("strategy", ["iterative", "instructions"])
def test_kill_9_then_resume_continues_the_same_tracker_runs(
    strategy: str, tmp_path: Path, template_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    uri = fresh_uri(template_db, tmp_path)
    run_dir, wandb_dir = tmp_path / "runs", tmp_path / "w"
    script = KILLED_RUN.format(
        tests=str(TESTS),
        at=2,
        run_dir=str(run_dir),
        strategy=strategy,
        uri=uri,
        wandb_dir=str(wandb_dir),
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == -9, done.stderr[-2000:]
    [reflex_run] = list((run_dir / "runs").iterdir())
    saved = json.loads((reflex_run / ".trackers.json").read_text())
    assert set(saved) == {"mlflow", "wandb"}

    FakeModel(reasoner_variants).install()
    mlflow_cb = MLflowCallback(tracking_uri=uri, log_prompt_each_iter=True)
    wandb_cb = WandbCallback(mode="offline", dir=str(wandb_dir), log_prompt_each_iter=True)
    result = builder(run_dir, strategy).run(START, callbacks=[mlflow_cb, wandb_cb], resume=True)
    assert result.completed and len(result.iterations) > 2
    assert mlflow_cb.run_id == saved["mlflow"]["run_id"]  # the same MLflow run
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("aevyra-reflex")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert (
        len([r for r in runs if "reflex.evaluation" not in r.data.tags]) == 1
    )  # evaluation runs aside
    assert wandb_cb.run_id == saved["wandb"]["run_id"]  # the same W&B run id
    dirs = sorted((wandb_dir / "wandb").glob("offline-run-*"))
    assert len(dirs) == 2  # the killed process's file and the resumed one's, one run id
    stores = Stores(uri, str(mlflow_cb.run_id), dirs)
    assert stores.wandb_ids == {saved["wandb"]["run_id"]}
    check_all_rows(stores, result)  # each step exactly once, in MLflow and in W&B
    assert not math.isnan(stores.run.data.metrics["final_score_test"])


def test_improvement_pct_when_the_baseline_is_0(
    tmp_path: Path, template_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bare prompt that scores 0 on exact match: the key is there, NaN/null with a note."""
    monkeypatch.chdir(tmp_path)
    uri = fresh_uri(template_db, tmp_path)

    def zero_until_told(request: Any) -> str:
        answer = reasoner_variants(request)
        if request.model == "fake/task" and "Answer with one word" not in request.system:
            return "I am not sure."
        return answer

    FakeModel(zero_until_told).install()
    mlflow_cb = MLflowCallback(tracking_uri=uri)
    wandb_cb = WandbCallback(mode="offline", dir=str(tmp_path))
    result = (
        builder(tmp_path / "runs", "iterative")
        .configure(allow_degenerate_seed=True)
        .run(START, callbacks=[mlflow_cb, wandb_cb])
    )
    assert result.baseline is not None and result.baseline.mean_score == 0
    assert result.improvement_pct is None and "baseline test score is 0" in str(
        result.improvement_pct_note
    )
    saved = json.loads((Path(str(result.run_dir)) / "result.json").read_text())
    assert saved["improvement_pct"] is None and saved["improvement_pct_note"]
    stores = Stores(uri, str(mlflow_cb.run_id), [Path(wandb_cb.run.settings.sync_dir)])
    assert math.isnan(stores.run.data.metrics["improvement_pct"])
    assert "baseline test score is 0" in stores.run.data.tags["reflex.improvement_pct_note"]
    assert stores.summary["improvement_pct"] is None
    assert stores.summary["improvement_pct_note"] == result.improvement_pct_note


def test_ctrl_c_then_resume_logs_each_step_once(
    tmp_path: Path, template_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C after iteration 2: the interrupted run logs its run-end numbers (the series' at
    step 3, one past its last iteration). The resumed run continues the same tracker runs and
    adds no second point at step 3; every series ends on the resumed run's run-end number."""
    monkeypatch.chdir(tmp_path)
    uri = fresh_uri(template_db, tmp_path)
    run_dir, wandb_dir = tmp_path / "runs", tmp_path / "w"

    class CtrlC:
        def on_iteration(self, record: Any) -> None:
            if record.iteration == 2:
                raise KeyboardInterrupt  # after both trackers logged iteration 2

    FakeModel(reasoner_variants).install()
    first = MLflowCallback(tracking_uri=uri)
    trackers = [first, WandbCallback(mode="offline", dir=str(wandb_dir))]
    with pytest.raises(KeyboardInterrupt):
        builder(run_dir, "iterative").run(START, callbacks=[*trackers, CtrlC()])
    client = MlflowClient(tracking_uri=uri)
    interrupted = client.get_metric_history(str(first.run_id), "total_iterations")
    assert [(m.step, m.value) for m in interrupted] == [(1, 1.0), (2, 2.0), (3, 2.0)]

    FakeModel(reasoner_variants).install()
    mlflow_cb = MLflowCallback(tracking_uri=uri)
    wandb_cb = WandbCallback(mode="offline", dir=str(wandb_dir))
    result = builder(run_dir, "iterative").run(START, callbacks=[mlflow_cb, wandb_cb], resume=True)
    assert result.completed and len(result.iterations) > 3 and mlflow_cb.run_id == first.run_id
    stores = Stores(uri, str(mlflow_cb.run_id), sorted((wandb_dir / "wandb").glob("offline-run-*")))
    assert stores.wandb_ids == {wandb_cb.run_id}
    once = set(run_end_values(result)) - set(SERIES) | {"improvement_pct", "converged"}
    for key in stores.run.data.metrics:
        steps = stores.steps(key)
        if key in once:  # the interrupted run's value (e.g. NaN: no final yet), then the new one
            assert set(steps) == {0}, (key, steps)
        else:
            assert len(steps) == len(set(steps)), (key, steps)  # no step twice
    last = len(result.iterations)
    for name in SERIES:
        assert stores.steps(name) == [*expected_steps(name, result), last + 1], name
        assert stores.wandb_steps(name) == expected_steps(name, result), name
    for name, value in run_end_values(result).items():
        if value is not None:
            assert stores.run.data.metrics[name] == pytest.approx(value), name
            assert stores.summary[name] == pytest.approx(value), name
