"""A tool-call run in the trackers: a real sqlite MLflow store and an offline W&B run, read back.

MLflow's per-row table (``evaluation.json``) holds each test row's answer with its tool calls in
the canonical answer text (:mod:`reflex.toolcalls`), so the calls a row made are visible per row
beside the expected call; W&B's offline run records the run's scores and the saved prompt.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_tool_call_run import SEED, _rows
from wandb_reader import load_run

from reflex.cli import main
from reflex.data.dataset import load_dataset
from reflex.testing.endpoint import ChatRequest, serve
from reflex.toolcalls import parse_answer

pytest.importorskip("mlflow")


@pytest.fixture
def endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """Tool-call rows and an endpoint that calls the expected tool once the prompt is edited."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    data = _rows(tmp_path, 20)
    expected = {row.input: row.ideal for row in load_dataset(data)}

    def respond(request: ChatRequest) -> str:
        edited = len(request.system) > len(SEED) or len(request.messages) > 2
        call = expected.get(request.user)
        return call if edited and call else "I would compute that for you."

    with serve(responder=respond) as url:
        yield data, str(url)


def _optimize(work: Path, data: Path, url: str, *trackers: str) -> None:
    (work / "prompt.md").write_text(SEED + "\n", encoding="utf-8")
    argv = ["optimize", str(data), str(work / "prompt.md"), "-m", "openai/task", "--api-base"]
    argv += [url, "-s", "auto", "--max-iterations", "2", "--metric", "tool_call,strings=bfcl"]
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--run-dir", str(work / ".reflex"), *trackers])
    assert stop.value.code in (0, None)


def test_mlflow_shows_each_rows_tool_calls(tmp_path: Path, endpoint: tuple[Path, str]) -> None:
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    data, url = endpoint
    _optimize(tmp_path, data, url, "--mlflow", "--mlflow-tracking-uri", uri)
    client = MlflowClient(tracking_uri=uri)
    found = client.search_runs([client.get_experiment_by_name("aevyra-reflex").experiment_id])
    (run,) = [r for r in found if "reflex.evaluation" not in r.data.tags]  # evaluation runs aside
    assert run.data.metrics["final_score_test"] == 1.0
    local = client.download_artifacts(run.info.run_id, "evaluation.json", str(tmp_path / "dl"))
    table = json.loads(Path(local).read_text(encoding="utf-8"))
    rows = [dict(zip(table["columns"], values, strict=True)) for values in table["data"]]
    assert rows
    for row in rows:
        name = parse_answer(row["expected"])[1][0].name
        assert [c.name for c in parse_answer(row["final_output"])[1]] == [name]
        assert parse_answer(row["baseline_output"])[1] == []  # prose: no call, scored 0


def test_wandb_records_a_tool_call_run_offline(
    tmp_path: Path, endpoint: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    wandb = pytest.importorskip("wandb")
    for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_MODE", "offline")
    data, url = endpoint
    _optimize(tmp_path, data, url, "--wandb")
    wandb.teardown()  # flush the .wandb file, and the next run does not reuse this one's dirs
    (run_dir,) = (tmp_path / "wandb_dir").rglob("offline-run-*")
    logged = load_run(str(run_dir))
    assert logged["exit_code"] == 0 and logged["config"]["metrics"] == "tool_call"
    assert logged["summary"]["final_score_test"] == 1.0
    assert logged["summary"]["baseline_score"] == 0.0  # prose answers: no tool call
