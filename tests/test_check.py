"""``aevyra-reflex check``: the CI gate's exit codes against a record and against a score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from conftest import BETTER, make_rows

from reflex import PromptOptimizer
from reflex.cli import build_cli
from reflex.testing import FakeModel

START = "Classify the sentiment."


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(build_cli(), ["check", *args], catch_exceptions=False)


@pytest.fixture
def record(fake_model: FakeModel, tmp_path: Path) -> Path:
    result = (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path / "rd")
        .run(START)
    )
    assert result.final is not None and result.final.mean_score == 1.0
    return Path(str(result.run_dir))


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_same_prompt_passes_against_its_record(
    record: Path, dataset_file: Path, tmp_path: Path
) -> None:
    prompt = _write(tmp_path / "p.md", BETTER)
    res = invoke(
        ["--prompt", str(prompt), "--dataset", str(dataset_file), "--baseline", str(record)]
    )
    assert res.exit_code == 0, res.output
    assert "verdict   ok" in res.output and "6 rows" in res.output  # the test split only


def test_regression_exits_1_with_the_numbers(
    record: Path, dataset_file: Path, tmp_path: Path
) -> None:
    prompt = _write(tmp_path / "p.md", START)
    args = ["--prompt", str(prompt), "--dataset", str(dataset_file)]
    res = invoke([*args, "--baseline", str(record / "result.json"), "--json"])
    assert res.exit_code == 1, res.output
    data = json.loads(res.output)
    assert data["baseline"] == 1.0 and data["current"] < 1.0 and data["regressed"]
    assert data["change"] == pytest.approx(data["current"] - 1.0)
    # A tolerance wide enough lets it pass.
    assert invoke([*args, "--baseline", str(record), "--tolerance", "1"]).exit_code == 0
    # A tolerance that is not a number never lets it pass: nan compares false with every delta.
    for bad in ("nan", "inf"):
        res = invoke([*args, "--baseline", str(record), "--tolerance", bad])
        assert res.exit_code == 2 and "is not a finite number" in res.output, res.output


def test_score_baseline_uses_the_whole_dataset(
    fake_model: FakeModel, dataset_file: Path, tmp_path: Path
) -> None:
    prompt = _write(tmp_path / "p.md", START)
    args = ["--prompt", str(prompt), "--dataset", str(dataset_file), "-m", "fake/task"]
    ok = invoke([*args, "--baseline", "0.3"])
    assert ok.exit_code == 0 and "30 rows" in ok.output
    bad = invoke([*args, "--baseline", "0.9"])
    assert bad.exit_code == 1 and "REGRESSION" in bad.output and "0.9000" in bad.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--baseline", "1.5"], "between 0 and 1"),
        (["--baseline", "no-such-run"], "no run matching"),
        (["--baseline", "0.5"], "no task model"),
        (["--baseline", "0.5", "-m", "fake/task", "--metric", "nope"], "unknown metric"),
    ],
)
def test_usage_errors_exit_2(
    dataset_file: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    prompt = _write(tmp_path / "p.md", START)
    res = invoke(["--prompt", str(prompt), "--dataset", str(dataset_file), *extra])
    assert res.exit_code == 2 and message in res.output, res.output


def test_record_with_other_metrics_or_rows_is_refused(
    record: Path, tmp_path: Path, dataset_file: Path
) -> None:
    prompt = _write(tmp_path / "p.md", BETTER)
    args = ["--prompt", str(prompt), "--baseline", str(record)]
    res = invoke([*args, "--dataset", str(dataset_file), "--metric", "contains"])
    assert res.exit_code == 2 and "not be comparable" in res.output
    other = _write(tmp_path / "other.jsonl", json.dumps({"id": "x", "input": "a", "ideal": "b"}))
    res = invoke([*args, "--dataset", str(other)])
    assert res.exit_code == 2 and "not in the dataset" in res.output
    res = invoke([*args, "--dataset", str(dataset_file), "--split", "train"])
    assert res.exit_code == 2 and "records no train score" in res.output


def test_score_baseline_sends_the_tools_and_response_format_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a record, ``--tools`` / ``--tool-choice`` / ``--response-format`` are what each
    request carries; a call answer then scores as the call it is."""
    from reflex.testing.endpoint import ChatRequest, serve

    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    tool = {
        "type": "function",
        "function": {
            "name": "area",
            "description": "Area of a square.",
            "parameters": {
                "type": "object",
                "properties": {"side": {"type": "integer"}},
                "required": ["side"],
            },
        },
    }
    tools = _write(tmp_path / "tools.json", json.dumps([tool]))
    call = '<tool_call>{{"name": "area", "arguments": {{"side": {n}}}}}</tool_call>'
    rows = [{"id": f"r{n}", "input": f"side {n}", "ideal": call.format(n=n)} for n in range(4)]
    data = _write(tmp_path / "rows.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    prompt = _write(tmp_path / "p.md", "Call the function.")
    seen: list[ChatRequest] = []

    def respond(request: ChatRequest) -> str:
        seen.append(request)
        return call.format(n=request.user.split()[-1])

    with serve(responder=respond) as url:
        args = ["--prompt", str(prompt), "--dataset", str(data), "-m", "openai/task"]
        args += ["--api-base", str(url), "--metric", "tool_call", "--baseline", "1", "--json"]
        res = invoke([*args, "--tools", str(tools), "--tool-choice", "required"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["current"] == 1.0
    assert len(seen) == 4
    assert all(r.params.get("tools") == [tool] for r in seen)
    assert all(r.params.get("tool_choice") == "required" for r in seen)
    bad = invoke([*args, "--tools", str(tools), "--tool-choice", "nope"])
    assert bad.exit_code == 2 and "nope" in bad.output, bad.output


def test_record_baseline_refuses_other_request_settings(
    record: Path, dataset_file: Path, tmp_path: Path
) -> None:
    prompt = _write(tmp_path / "p.md", BETTER)
    fmt = _write(tmp_path / "fmt.json", json.dumps({"type": "json_object"}))
    args = ["--prompt", str(prompt), "--dataset", str(dataset_file), "--baseline", str(record)]
    res = invoke([*args, "--response-format", str(fmt)])
    assert res.exit_code == 2 and "--response-format differs" in res.output, res.output


def test_a_constant_answer_is_flagged_on_a_label_task(dataset_file: Path, tmp_path: Path) -> None:
    FakeModel(lambda request: "positive").install()
    prompt = _write(tmp_path / "p.md", START)
    args = ["--prompt", str(prompt), "--dataset", str(dataset_file), "-m", "fake/task"]
    res = invoke([*args, "--baseline", "0.3"])
    assert res.exit_code == 0, res.output  # a flag, not a regression
    assert "warning   trivial_winner: the prompt answered 'positive'" in res.output
    data = json.loads(invoke([*args, "--baseline", "0.3", "--json"]).output)
    assert data["label_check"]["trivial"] is True
    assert data["label_check"]["constant"] == pytest.approx(0.5)
