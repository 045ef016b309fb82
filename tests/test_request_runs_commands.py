"""``check``, ``export``, ``compare``, ``verify`` and ``sync`` on a tool-call run, a JSON run and
a chat-template run, end to end on the local endpoint.

Each run is an ``optimize`` from the CLI; then every command works on it and keeps what its
requests carried: ``check`` and ``compare`` send the same tools, tool choice and response format
(and render the template with the run's ``--var`` mapping), ``export`` writes OpenAI's
fine-tuning form (an answer's calls as ``tool_calls`` beside the ``tools``, a template's
messages rendered), ``verify`` finds the sealed record intact, and ``sync`` replays the run
into a real sqlite MLflow store and an offline W&B run, each row's answer in their evaluation
tables.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reflex.cli import build_cli
from reflex.data.dataset import load_dataset
from reflex.testing.endpoint import ChatRequest, serve
from reflex.toolcalls import parse_answer

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SEED = "Answer."


@dataclass
class Kind:
    """One kind of run: its rows, prompt, optimize flags and the endpoint's answers."""

    data: Path
    prompt: Path
    flags: list[str]
    answer: Callable[[ChatRequest], str]
    carried: Callable[[ChatRequest], bool]  # the request carries what the run's requests did
    seen: list[ChatRequest] = field(default_factory=list)

    def respond(self, request: ChatRequest) -> str:
        self.seen.append(request)
        return self.answer(request)


def _edited(request: ChatRequest) -> bool:
    return len(request.system) > len(SEED) or len(request.messages) > 2


def _seed(work: Path) -> Path:
    prompt = work / "prompt.md"
    prompt.write_text(SEED + "\n", encoding="utf-8")
    return prompt


def _tools(work: Path) -> Kind:
    lines = (EXAMPLES / "tool_calls" / "dataset.jsonl").read_text("utf-8").splitlines()[:16]
    data = work / "calls.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = load_dataset(data)
    expected = {row.input: row.ideal for row in rows}
    tools = {row.input: [dict(t) for t in row.tools] for row in rows}

    def answer(request: ChatRequest) -> str:
        call = expected.get(request.user)
        return call if _edited(request) and call else "I would compute that for you."

    def carried(request: ChatRequest) -> bool:
        offered = request.params.get("tools") == tools[request.user]
        return offered and request.params.get("tool_choice") == "auto"

    flags = ["--metric", "tool_call,strings=bfcl", "--tool-choice", "auto"]
    return Kind(data, _seed(work), flags, answer, carried)


def _json(work: Path) -> Kind:
    lines = (EXAMPLES / "extraction" / "dataset.jsonl").read_text("utf-8").splitlines()[:16]
    data = work / "q.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    schema = work / "format.json"
    schema.write_text((EXAMPLES / "extraction" / "response_format.json").read_text("utf-8"))
    sent = json.loads(schema.read_text(encoding="utf-8"))
    expected = {row.input: row.ideal or "{}" for row in load_dataset(data)}

    def answer(request: ChatRequest) -> str:
        text = expected.get(request.user, "{}")
        return text if _edited(request) else f"```json\n{text}\n```"

    def carried(request: ChatRequest) -> bool:
        return request.params.get("response_format") == sent

    flags = ["--metric", f"json_match,schema={schema}", "--response-format", str(schema)]
    return Kind(data, _seed(work), flags, answer, carried)


def _template(work: Path) -> Kind:
    raw = (EXAMPLES / "template" / "rows.jsonl").read_text("utf-8").splitlines()
    rows = [json.loads(line) for line in raw]
    for row in rows:
        row["q"] = row.pop("question")
    data = work / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ideal = {f"Context: {r['context']}\nQuestion: {r['q']}": r["ideal"] for r in rows}
    prompt = work / "template.json"
    prompt.write_text((EXAMPLES / "template" / "prompt.json").read_text("utf-8"), "utf-8")

    def answer(request: ChatRequest) -> str:
        return ideal.get(request.user, "?") if len(request.messages) > 2 else "?"

    def carried(request: ChatRequest) -> bool:
        users = [str(m.get("content")) for m in request.messages if m.get("role") == "user"]
        return all(u.startswith("Context: ") and "{{" not in u for u in users)

    flags = ["--var", "question=q", "--allow-degenerate-seed"]
    return Kind(data, prompt, flags, answer, carried)


KINDS = {"tools": _tools, "json": _json, "template": _template}


def _invoke(args: list[str]) -> Any:
    return CliRunner().invoke(build_cli(), args, catch_exceptions=False)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_command_works_on_the_run(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    monkeypatch.chdir(tmp_path)
    kind = KINDS[name](tmp_path)
    strategy = "fewshot" if name == "template" else "auto"
    best, out = tmp_path / ("best.json" if name == "template" else "best.md"), tmp_path / "r.json"
    with serve(responder=kind.respond) as url:
        model = ["-m", "openai/task", "--api-base", str(url)]
        args = ["optimize", str(kind.data), str(kind.prompt), *model, "-s", strategy]
        args += ["--max-iterations", "2", "--run-dir", "rd", "-o", str(best), "--accept", "any"]
        done = _invoke([*args, "--results-json", str(out), *kind.flags])
        assert done.exit_code == 0, done.output
        assert kind.seen and all(kind.carried(r) for r in kind.seen)
        result = json.loads(out.read_text(encoding="utf-8"))
        assert result["baseline"]["mean_score"] == 0.0 and result["final"]["mean_score"] == 1.0
        run = Path(result["run_dir"])

        # check: the best prompt again, on the same requests (no cache: each one is sent)
        kind.seen.clear()
        check = ["check", "--prompt", str(best), "--dataset", str(kind.data)]
        checked = _invoke([*check, "--baseline", str(run), *model, "--json"])
        assert checked.exit_code == 0, checked.output
        assert json.loads(checked.output)["current"] == 1.0
        assert kind.seen and all(kind.carried(r) for r in kind.seen)

        # export: the best prompt's rollouts as fine-tuning rows
        train = tmp_path / "train.jsonl"
        exported = _invoke(["export", str(run), "--training-jsonl", str(train), "--allow-calls"])
        assert exported.exit_code == 0, exported.output
        rows = [json.loads(line) for line in train.read_text(encoding="utf-8").splitlines()]
        assert rows
        _check_export(name, rows, kind)

        # compare: a one-cell grid with the run's flags
        kind.seen.clear()
        grid = ["compare", str(kind.data), str(kind.prompt), *model, "--strategies", strategy]
        grid += ["--seeds", "1", "--max-iterations", "1", "--run-dir", "rd", *kind.flags]
        grid += ["--accept", "any"]  # a few val rows: the commands are under test, not the gate
        compared = _invoke([*grid, "--out-dir", str(tmp_path / "grid")])
        assert compared.exit_code == 0, compared.output
        assert (tmp_path / "grid" / "compare.json").is_file()
        assert kind.seen and all(kind.carried(r) for r in kind.seen)

    # verify: the sealed record is intact
    verified = _invoke(["verify", str(run)])
    assert verified.exit_code == 0, verified.output

    # sync: the run replayed into a real sqlite MLflow store, each row's answer visible
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    synced = _invoke(["sync", str(run), "--run-dir", "rd", "--mlflow-tracking-uri", uri])
    assert synced.exit_code == 0, synced.output
    client = MlflowClient(tracking_uri=uri)
    found = client.search_runs([client.get_experiment_by_name("aevyra-reflex").experiment_id])
    (logged,) = [
        r for r in found if "reflex.evaluation" not in r.data.tags
    ]  # evaluation runs aside
    assert logged.data.metrics["final_score_test"] == 1.0
    table = client.download_artifacts(logged.info.run_id, "evaluation.json", str(tmp_path / "d"))
    data = json.loads(Path(table).read_text(encoding="utf-8"))
    shown = [dict(zip(data["columns"], values, strict=True)) for values in data["data"]]
    assert shown and all(row["input"] and row["expected"] for row in shown)
    assert all(row["final_score"] == 1.0 for row in shown)
    params = logged.data.params
    if name == "tools":
        assert params["tool_choice"] == "auto"
        assert all(parse_answer(row["final_output"])[1] for row in shown)
    elif name == "json":
        assert params["response_format"] == "json_schema:quantities"
    else:
        assert params["template_variables"] == "context,question=q"
    _sync_wandb(run, tmp_path, monkeypatch, shown)


def _sync_wandb(
    run: Path, work: Path, monkeypatch: pytest.MonkeyPatch, mlflow_rows: list[dict[str, Any]]
) -> None:
    """``sync`` into an offline W&B run: its evaluation table holds MLflow's rows."""
    import wandb
    from wandb_reader import load_run

    for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.setenv(name, str(work / name.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    synced = _invoke(["sync", str(run), "--run-dir", "rd", "--wandb-mode", "offline"])
    assert synced.exit_code == 0, synced.output
    wandb.teardown()  # flush the .wandb file before reading it
    (where,) = [line for line in synced.output.splitlines() if line.startswith("W&B: offline")]
    logged = load_run(where.split(" in ", 1)[1])
    assert logged["summary"]["final_score_test"] == 1.0
    path = Path(logged["dir"]) / "files" / logged["summary"]["evaluation.path"]
    table = json.loads(path.read_text(encoding="utf-8"))
    rows = [dict(zip(table["columns"], values, strict=True)) for values in table["data"]]
    assert [r["final_output"] for r in rows] == [r["final_output"] for r in mlflow_rows]


def _check_export(name: str, rows: list[dict[str, Any]], kind: Kind) -> None:
    for row in rows:
        answer = row["messages"][-1]
        assert answer["role"] == "assistant"
        if name == "tools":
            user = next(m["content"] for m in reversed(row["messages"]) if m["role"] == "user")
            expected = parse_answer(load_dataset_ideal(kind, user))[1]
            assert answer["tool_calls"] and row["tools"]
            assert [c["function"]["name"] for c in answer["tool_calls"]] == [
                c.name for c in expected
            ]
        elif name == "json":
            assert isinstance(json.loads(answer["content"]), dict)
        else:
            users = [m["content"] for m in row["messages"] if m["role"] == "user"]
            assert all(u.startswith("Context: ") and "{{" not in u for u in users)


def load_dataset_ideal(kind: Kind, user: str) -> str:
    return next(str(row.ideal) for row in load_dataset(kind.data) if row.input == user)
