"""A JSON run, a chat-template run and a run with ``--tools`` in the trackers, read back.

Each run goes to the local endpoint with both trackers on: a real sqlite MLflow store (read back
with ``MlflowClient``) and an offline W&B run (read back from its ``.wandb`` file). Per row, the
answer is visible in MLflow's ``evaluation.json`` and W&B's ``evaluation`` table (the JSON as
written, a call as its canonical answer text, a template row's input as its variables); the
params say what every request carried besides the prompt: the tools (names and a digest; the
schemas whole as MLflow's ``tools.json``), the tool choice, the response format, and whether the
prompt is a chat template with which variables.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from wandb_reader import load_run

from reflex.cli import main
from reflex.data.dataset import load_dataset
from reflex.testing.endpoint import ChatRequest, serve
from reflex.toolcalls import ToolCall, parse_answer, render_answer

pytest.importorskip("mlflow")
pytest.importorskip("wandb")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SEED = "Answer."
WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
CITIES = ["Paris", "Oslo", "Rome", "Lima", "Kyiv", "Doha"]

Responder = Callable[[ChatRequest], str]


def _edited(request: ChatRequest) -> bool:
    """The candidate changed the prompt: a longer system message or demos as chat turns."""
    return len(request.system) > len(SEED) or len(request.messages) > 2


def _json_run(work: Path) -> tuple[list[str], Responder]:
    lines = (EXAMPLES / "extraction" / "dataset.jsonl").read_text(encoding="utf-8").splitlines()
    data = work / "q.jsonl"
    data.write_text("\n".join(lines[:20]) + "\n", encoding="utf-8")
    schema = work / "format.json"
    schema.write_text((EXAMPLES / "extraction" / "response_format.json").read_text("utf-8"))
    expected = {row.input: row.ideal or "{}" for row in load_dataset(data)}

    def respond(request: ChatRequest) -> str:
        answer = expected.get(request.user, "{}")
        return answer if _edited(request) else f"```json\n{answer}\n```"  # fenced: 0

    argv = [str(data), "--metric", f"json_match,schema={schema}"]
    return [*argv, "--response-format", str(schema)], respond


def _template_run(work: Path) -> tuple[list[str], Responder]:
    rows = [
        json.loads(line)
        for line in (EXAMPLES / "template" / "rows.jsonl").read_text("utf-8").splitlines()
    ]
    for row in rows:  # the question under another field name: --var question=q
        row["q"] = row.pop("question")
    data = work / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ideal = {f"Context: {r['context']}\nQuestion: {r['q']}": r["ideal"] for r in rows}

    def respond(request: ChatRequest) -> str:
        assert "{{" not in request.user
        demos = len(request.messages) > 2  # fewshot's demos, as chat turns
        return ideal.get(request.user, "?") if demos else "?"

    prompt = work / "template.json"
    prompt.write_text((EXAMPLES / "template" / "prompt.json").read_text("utf-8"), "utf-8")
    argv = [str(data), "--prompt-file", str(prompt), "--var", "question=q"]
    return [*argv, "--allow-degenerate-seed"], respond


def _tools_run(work: Path) -> tuple[list[str], Responder]:
    tools = work / "tools.json"
    tools.write_text(json.dumps([WEATHER]), encoding="utf-8")
    rows = []
    for i, city in enumerate(CITIES * 3):
        call = render_answer(None, [ToolCall("get_weather", {"city": city})])
        rows.append({"id": f"r{i}", "input": f"weather in {city}, case {i}", "ideal": call})
    data = work / "calls.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    def respond(request: ChatRequest) -> str:
        assert request.params.get("tools") == [WEATHER]
        city = request.user.split(",")[0].rsplit(" ", 1)[-1]
        call = render_answer(None, [ToolCall("get_weather", {"city": city})])
        return call if _edited(request) else "It is sunny, probably."

    argv = [str(data), "--metric", "tool_call", "--tools", str(tools)]
    return [*argv, "--tool-choice", "get_weather"], respond


RUNS = {"json": _json_run, "template": _template_run, "tools": _tools_run}


def _optimize(
    work: Path, kind: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[str, Path]:
    """One run of ``kind`` into both trackers; the MLflow URI and the W&B offline run folder."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.setenv(name, str(work / name.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_MODE", "offline")
    args, respond = RUNS[kind](work)
    data, *extra = args
    if "--prompt-file" in extra:
        at = extra.index("--prompt-file")
        prompt = extra[at + 1]
        del extra[at : at + 2]
    else:
        prompt = str(work / "prompt.md")
        Path(prompt).write_text(SEED + "\n", encoding="utf-8")
    uri = f"sqlite:///{work / 'mlflow.db'}"
    with serve(responder=respond) as url:
        argv = ["optimize", data, prompt, "-m", "openai/task", "--api-base", str(url)]
        argv += ["-s", "fewshot" if kind == "template" else "auto", "--max-iterations", "2"]
        argv += ["--run-dir", str(work / ".reflex"), "--mlflow-tracking-uri", uri, "--wandb"]
        with pytest.raises(SystemExit) as stop:
            main([*argv, *extra])
    assert stop.value.code in (0, None)
    import wandb

    wandb.teardown()  # flush the .wandb file before reading it
    # W&B keeps its first run's folder for the process: the CLI says where this one went.
    err = capsys.readouterr().err
    (where,) = [line for line in err.splitlines() if line.startswith("W&B: offline run ")]
    return uri, Path(where.split(" in ", 1)[1])


def _mlflow(uri: str, work: Path) -> tuple[dict[str, str], list[dict[str, Any]], Any, str]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.search_runs([client.get_experiment_by_name("aevyra-reflex").experiment_id])
    (run,) = [r for r in found if "reflex.evaluation" not in r.data.tags]  # evaluation runs aside
    run_id = run.info.run_id
    local = client.download_artifacts(run_id, "evaluation.json", str(work / "dl"))
    table = json.loads(Path(local).read_text(encoding="utf-8"))
    rows = [dict(zip(table["columns"], values, strict=True)) for values in table["data"]]
    assert rows
    return run.data.params, rows, client, run_id


def _wandb_rows(logged: dict[str, Any]) -> list[dict[str, Any]]:
    summary = logged["summary"]  # the reader joins nested keys with "."
    assert summary["evaluation._type"] == "table-file"
    path = Path(logged["dir"]) / "files" / summary["evaluation.path"]
    table = json.loads(path.read_text(encoding="utf-8"))
    return [dict(zip(table["columns"], values, strict=True)) for values in table["data"]]


def test_a_json_run_shows_each_rows_json_and_its_response_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, run_dir = _optimize(tmp_path, "json", monkeypatch, capsys)
    params, rows, client, run_id = _mlflow(uri, tmp_path)
    assert params["response_format"] == "json_schema:quantities"
    assert len(params["response_format_sha256"]) == 16
    assert params["tools"] == "None" and params["template"] == "False"
    sent = json.loads((tmp_path / "format.json").read_text(encoding="utf-8"))
    local = client.download_artifacts(run_id, "response_format.json", str(tmp_path / "rf"))
    assert json.loads(Path(local).read_text(encoding="utf-8")) == sent
    for row in rows:
        assert json.loads(row["final_output"]) == json.loads(row["expected"])
        assert row["baseline_output"].startswith("```json") and row["baseline_score"] == 0.0
    logged = load_run(str(run_dir))
    assert logged["config"]["response_format"] == "json_schema:quantities"
    assert logged["summary"]["final_score_test"] == 1.0
    shown = _wandb_rows(logged)
    assert [r["final_output"] for r in shown] == [r["final_output"] for r in rows]


def test_a_template_run_shows_its_variables_and_each_rows_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, run_dir = _optimize(tmp_path, "template", monkeypatch, capsys)
    params, rows, _, _ = _mlflow(uri, tmp_path)
    assert params["template"] == "True"
    assert params["template_variables"] == "context,question=q"
    assert params["response_format"] == "None" and params["tool_choice"] == "None"
    for row in rows:
        assert set(json.loads(row["input"])) == {"context", "question"}  # the row's variables
        assert row["final_output"] == row["expected"] != "?"
    logged = load_run(str(run_dir))
    assert logged["config"]["template_variables"] == "context,question=q"
    shown = _wandb_rows(logged)
    assert {r["example_id"]: r["input"] for r in shown} == {
        r["example_id"]: r["input"] for r in rows
    }


def test_a_run_with_tools_logs_them_and_each_rows_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, run_dir = _optimize(tmp_path, "tools", monkeypatch, capsys)
    params, rows, client, run_id = _mlflow(uri, tmp_path)
    assert params["tools"] == "get_weather" and params["tool_choice"] == "get_weather"
    local = client.download_artifacts(run_id, "tools.json", str(tmp_path / "tools"))
    assert json.loads(Path(local).read_text(encoding="utf-8")) == [WEATHER]
    for row in rows:
        assert parse_answer(row["final_output"])[1] == parse_answer(row["expected"])[1]
        assert parse_answer(row["baseline_output"])[1] == []
    logged = load_run(str(run_dir))
    assert logged["config"]["tools"] == "get_weather"
    assert logged["config"]["tools_sha256"] == params["tools_sha256"]
    calls = [parse_answer(r["final_output"])[1][0].name for r in _wandb_rows(logged)]
    assert calls and set(calls) == {"get_weather"}
