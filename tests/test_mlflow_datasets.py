"""``mlflow:<evaluation dataset>`` and ``mlflow-traces:<experiment>`` as reflex datasets, against
a real sqlite MLflow store: read in Python, run from the CLI on the fake model, bad input refused
with one line and exit 2 before any model call."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest
from click.testing import CliRunner, Result
from conftest import make_rows
from mlflow.genai.datasets import create_dataset
from mlflow.tracking._tracking_service import utils as tracking_utils

import reflex_mlflow
from reflex import DatasetError, PromptOptimizer, load_dataset
from reflex.api import ConfigurationError
from reflex.cli import build_cli
from reflex.testing import FakeModel

ROWS = make_rows(24)


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A sqlite store with an evaluation dataset ``reviews`` (make_rows' rows), one
    ``unlabelled`` and an experiment ``traffic`` of traces, some with an expectation: built once
    (the tests only read it)."""
    folder = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_TRACKING_URI", uri)
        patch.setattr(tracking_utils, "_tracking_uri", None)
        patch.chdir(folder)
        # mlflow.set_experiment exports MLFLOW_EXPERIMENT_ID: recorded as unset, so it goes after.
        patch.setenv("MLFLOW_EXPERIMENT_ID", "")
        patch.delenv("MLFLOW_EXPERIMENT_ID")
        experiment = mlflow.set_experiment("traffic").experiment_id
        dataset = create_dataset(name="reviews", experiment_id=[experiment])
        dataset.merge_records(
            [
                {"inputs": {"input": r["input"]}, "expectations": {"expected_response": r["ideal"]}}
                for r in ROWS
            ]
        )
        create_dataset(name="unlabelled", experiment_id=[experiment]).merge_records(
            [{"inputs": {"input": r["input"]}} for r in ROWS[:3]]
        )
        _traces(ROWS[:12])
        mlflow.tracking.fluent._active_experiment_id = None
    yield uri


@pytest.fixture
def store(populated: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """MLFLOW_TRACKING_URI on the populated store; the working directory an empty folder."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", populated)
    monkeypatch.setattr(tracking_utils, "_tracking_uri", None)
    monkeypatch.chdir(tmp_path)
    return populated


@mlflow.trace
def answer(input: str) -> str:
    return "positive"


def _traces(rows: list[dict[str, str]]) -> None:
    """One trace per row; all but every fourth get the row's label as an expectation, and the
    first half is tagged ``kind=keep``."""
    for i, row in enumerate(rows):
        answer(row["input"])
        mlflow.flush_trace_async_logging()
        trace_id = str(mlflow.get_last_active_trace_id())
        if i < len(rows) // 2:
            mlflow.MlflowClient().set_trace_tag(trace_id, "kind", "keep")
        if i % 4:
            mlflow.log_expectation(trace_id=trace_id, name="expected_response", value=row["ideal"])


def _record_ids(name: str) -> list[str]:
    frame = mlflow.genai.datasets.get_dataset(name=name).to_df()
    return sorted(str(i) for i in frame["dataset_record_id"])


def test_an_evaluation_dataset_is_a_dataset_with_its_record_ids(store: str) -> None:
    data = load_dataset("mlflow:reviews")
    assert (data.name, data.source, len(data)) == ("reviews", "mlflow:reviews", len(ROWS))
    assert data.ids == _record_ids("reviews")
    by_input = {r["input"]: r["ideal"] for r in ROWS}
    assert all(by_input[e.input] == e.ideal for e in data)
    assert data[0].metadata["expectations"] == {"expected_response": data[0].ideal}
    again = load_dataset(f"mlflow:{data[0].metadata['mlflow_dataset']}")  # by its id
    assert again.ids == data.ids and again.fingerprint() == data.fingerprint()


def test_traces_with_expectations_are_a_dataset(store: str) -> None:
    data = load_dataset("mlflow-traces:traffic")
    assert len(data) == 9  # 12 traces, every fourth without an expectation
    assert all(i.startswith("tr-") for i in data.ids) and data.ids == sorted(data.ids)
    assert {e.metadata["mlflow_trace"] for e in data} == set(data.ids)
    by_input = {r["input"]: r["ideal"] for r in ROWS}
    assert all(by_input[e.input] == e.ideal for e in data)
    kept = load_dataset("mlflow-traces:traffic?filter=tags.kind = 'keep'&max_results=50")
    assert len(kept) == 4 and set(kept.ids) < set(data.ids)


def _optimize(*args: str) -> Result:
    return CliRunner().invoke(
        build_cli(),
        # Record and trace ids are random, so the split is: the seed check is not what is tested.
        [
            *("optimize", *args, "-m", "fake/task", "--reasoning-model", "fake/reasoner"),
            "--allow-degenerate-seed",
        ],
    )


def test_the_cli_runs_on_an_mlflow_dataset_and_splits_it_the_same_way_twice(
    store: str, fake_model: FakeModel, tmp_path: Path
) -> None:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Classify the sentiment.\n", encoding="utf-8")
    splits = []
    for run in ("a", "b"):
        result = _optimize("mlflow:reviews", str(prompt), "--max-iterations", "1", "--run-dir", run)
        assert result.exit_code == 0, result.output
        (folder,) = (tmp_path / run / "runs").iterdir()
        splits.append(json.loads((folder / "splits.json").read_text(encoding="utf-8")))
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        assert config["dataset_name"] == "reviews"
    assert splits[0] == splits[1]
    ids = set(_record_ids("reviews"))
    assert {i for part in ("train", "val", "test") for i in splits[0][part]} == ids


def test_the_builder_takes_traces(store: str, fake_model: FakeModel, tmp_path: Path) -> None:
    result = (
        PromptOptimizer()
        .set_dataset("mlflow-traces:traffic")
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path / "runs")
        .set_max_iterations(1)
        # The trace ids are random, so the split is: the fake answers 3 of the 9 rows right, and
        # about one split in 20 puts none of them in the preflight rows (CI's stop 41).
        .set_allow_degenerate_seed()
        .run("Classify the sentiment.")
    )
    assert result.completed and result.final is not None
    assert all(s.example_id.startswith("tr-") for s in result.final.samples)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("mlflow:nope", "mlflow:nope: Dataset with name 'nope' not found"),
        ("mlflow:unlabelled", "mlflow:unlabelled: no row has an expectation"),
        ("mlflow-traces:nope", "mlflow-traces:nope: no experiment named 'nope'"),
        ("mlflow-traces:traffic?filter=tags.kind = 'none'", "no rows; 0 trace(s) matched"),
        ("mlflow-traces:traffic?limit=3", "unknown option 'limit'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_before_any_call(
    store: str, fake_model: FakeModel, tmp_path: Path, source: str, message: str
) -> None:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Classify the sentiment.\n", encoding="utf-8")
    result = _optimize(source, str(prompt))
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: ") and message in line
    assert fake_model.requests == []


def test_without_mlflow_a_source_says_what_to_install(
    store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "reflex_mlflow.datasets", None)  # import fails: no MLflow
    monkeypatch.delattr(reflex_mlflow, "datasets", raising=False)
    with pytest.raises(ConfigurationError, match=r"needs MLflow .*pip install 'aevyra-reflex\[ml"):
        load_dataset("mlflow:reviews")
    with pytest.raises(DatasetError, match="no such file"):
        load_dataset("mlflowx:reviews")


@pytest.mark.services
def test_an_evaluation_dataset_on_an_mlflow_server_on_postgresql(
    mlflow_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mlflow:<name>`` read from ``mlflow server`` on PostgreSQL (``.ci/services``)."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    monkeypatch.setattr(tracking_utils, "_tracking_uri", None)
    monkeypatch.chdir(tmp_path)
    name = f"reviews-{tmp_path.name}"  # the server lives for the session
    experiment = mlflow.set_experiment(f"data-{tmp_path.name}").experiment_id
    mlflow.tracking.fluent._active_experiment_id = None
    create_dataset(name=name, experiment_id=[experiment]).merge_records(
        [
            {"inputs": {"input": r["input"]}, "expectations": {"expected_response": r["ideal"]}}
            for r in ROWS
        ]
    )
    data = load_dataset(f"mlflow:{name}")
    assert (data.name, data.source, len(data)) == (name, f"mlflow:{name}", len(ROWS))
    by_input = {r["input"]: r["ideal"] for r in ROWS}
    assert all(by_input[e.input] == e.ideal for e in data)
    again = load_dataset(f"mlflow:{data[0].metadata['mlflow_dataset']}")  # by its id
    assert again.ids == data.ids and again.fingerprint() == data.fingerprint()
