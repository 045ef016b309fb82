"""Bad input for templates, tools and structured output: one ``file:line`` line, exit 2, no call.

Each case goes through the CLI (the local endpoint records every request: none may arrive) and
through Python (the error's type): a row missing a template variable, a ``--tools`` file that is
not a list of function schemas, a ``--response-format`` schema that is not JSON Schema (checked
against its metaschema with ``jsonschema``), a reference call naming a tool that is not offered
(by the row, or by the run), and a ``--tool-choice`` naming a function a row's tools lack.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reflex import PromptOptimizer
from reflex.cli import build_cli
from reflex.data.dataset import load_dataset
from reflex.errors import ConfigurationError, DatasetError
from reflex.testing.endpoint import serve
from reflex.testing.http import Request
from reflex.toolcalls import ToolCall, render_answer

TEMPLATE = [
    {"role": "system", "content": "Answer the question about the text."},
    {"role": "user", "content": "Context: {{context}}\nQuestion: {{question}}"},
]


def tool(name: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {"city": {"type": "string"}}}
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def call(name: str) -> str:
    return render_answer(None, [ToolCall(name, {"city": "Oslo"})])


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def plain_rows(work: Path, name: str = "get_weather") -> Path:
    rows = [{"id": f"r{i}", "input": f"weather {i}", "ideal": call(name)} for i in range(6)]
    return write_rows(work / "rows.jsonl", rows)


def tool_rows(work: Path) -> Path:
    """Rows in OpenAI's fine-tuning format, each offering get_weather; row 4 offers get_time."""
    rows = []
    for i in range(6):
        name = "get_time" if i == 3 else "get_weather"
        expected = {"id": "c", "type": "function", "function": {"name": name}}
        expected["function"]["arguments"] = '{"city": "Oslo"}'  # type: ignore[index]
        messages = [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": None, "tool_calls": [expected]},
        ]
        rows.append({"id": f"r{i}", "messages": messages, "tools": [tool(name)]})
    return write_rows(work / "calls.jsonl", rows)


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.md").write_text("Answer.\n", encoding="utf-8")
    return tmp_path


def refused(work: Path, data: Path, *extra: str, prompt: str = "p.md") -> str:
    """The CLI's one error line for a run that must stop with exit 2 before any request."""
    captured: list[Request] = []
    with serve(capture=captured) as url:
        args = ["optimize", str(data), prompt, "-m", "openai/task", "--api-base", url]
        result = CliRunner().invoke(build_cli(), [*args, "--run-dir", str(work / "rd"), *extra])
    assert result.exit_code == 2, result.output
    assert captured == []  # no call was paid
    line = result.output.strip()
    assert "\n" not in line and "Traceback" not in line, result.output
    return line


# --- (a) a row missing a template variable ----------------------------------------------------


def test_a_row_missing_a_variable(work: Path) -> None:
    rows = [{"id": f"q{i}", "context": "c", "question": "q", "ideal": "a"} for i in range(6)]
    del rows[2]["question"]
    data = write_rows(work / "rows.jsonl", rows)
    (work / "t.json").write_text(json.dumps(TEMPLATE), encoding="utf-8")
    line = refused(work, data, prompt="t.json")
    assert line.startswith(f"error: {data}:3: field 'question' for the template variable"), line
    fields = {"context": "context", "question": "question"}
    with pytest.raises(DatasetError, match=rf"^{data}:3: field 'question'"):
        load_dataset(data, variables=fields)
    with pytest.raises(DatasetError, match=rf"^{data}:3: field 'question'"):
        PromptOptimizer().set_dataset(data).add_provider("openai/task").run(TEMPLATE)


# --- (b) a tools file that is not a list of function schemas -----------------------------------

BAD_TOOLS = [
    ('{"name": "get_weather"}', 1, "the tools are a dict, not a list"),
    ('[\n  {"type": "function", "function": {"name": "f"}},\n  "g"\n]', 3, "tools[1] is not a"),
    ('[\n  {"name": "f",\n   "parameters": {"type": "dict"}}\n]', 3, "not valid JSON Schema"),
    ('[\n  {"type": "retrieval"}\n]', 2, "tools[0].type is 'retrieval'"),
    ('[\n  {"name": "f"},\n  {"name": "f"}\n]', 3, "repeats the function name 'f'"),
    ('[\n  {"name": "f",}\n]', 2, "not valid JSON"),
]


@pytest.mark.parametrize(("content", "line", "words"), BAD_TOOLS)
def test_a_tools_file_that_is_not_function_schemas(
    work: Path, content: str, line: int, words: str
) -> None:
    (work / "tools.json").write_text(content, encoding="utf-8")
    shown = refused(work, plain_rows(work), "--tools", "tools.json")
    assert shown.startswith(f"error: tools.json:{line}: ") and words in shown, shown
    with pytest.raises(ConfigurationError, match=rf"^tools.json:{line}: .*{_re(words)}"):
        PromptOptimizer().set_tools("tools.json")


# --- (c) a response-format schema that is not JSON Schema -------------------------------------

BAD_FORMATS = [
    ('{\n "type": "json_schema",\n "json_schema": {\n  "schema": {"type": 3}}}', 4, "type: 3"),
    ('{\n  "type": "object",\n  "properties": {\n    "n": {"minimum": "x"}}}', 4, "minimum"),
    ('{\n  "type": "object",\n  "required": "name"\n}', 3, "required"),
    ('{\n  "type": "yaml"\n}', 2, "'yaml'"),
]


@pytest.mark.parametrize(("content", "line", "words"), BAD_FORMATS)
def test_a_response_format_that_is_not_json_schema(
    work: Path, content: str, line: int, words: str
) -> None:
    (work / "fmt.json").write_text(content, encoding="utf-8")
    shown = refused(work, plain_rows(work), "--response-format", "fmt.json")
    assert shown.startswith(f"error: fmt.json:{line}: ") and words in shown, shown
    with pytest.raises(ConfigurationError, match=rf"^fmt.json:{line}: .*{_re(words)}"):
        PromptOptimizer().set_response_format("fmt.json")


# --- (d) a reference call naming a tool that is not offered -----------------------------------


def test_a_reference_call_to_a_tool_the_row_does_not_offer(work: Path) -> None:
    data = tool_rows(work)
    rows = data.read_text(encoding="utf-8").splitlines()
    bad = json.loads(rows[4])
    bad["messages"][-1]["tool_calls"][0]["function"]["name"] = "get_wether"
    rows[4] = json.dumps(bad)
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    shown = refused(work, data, "--metric", "tool_call")
    assert shown.startswith(f"error: {data}:5: the reference calls 'get_wether'"), shown
    with pytest.raises(DatasetError, match=rf"^{data}:5: the reference calls 'get_wether'"):
        load_dataset(data)


def test_a_reference_call_to_a_tool_the_run_does_not_offer(work: Path) -> None:
    data = plain_rows(work)
    rows = data.read_text(encoding="utf-8").splitlines()
    rows[1] = json.dumps({"id": "odd", "input": "time?", "ideal": call("get_time")})
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    (work / "tools.json").write_text(json.dumps([tool("get_weather")]), encoding="utf-8")
    shown = refused(work, data, "--tools", "tools.json")
    assert shown.startswith(f"error: {data}:2: the reference calls 'get_time'"), shown
    with pytest.raises(DatasetError, match=rf"^{data}:2: the reference calls 'get_time'"):
        load_dataset(data, tools=[tool("get_weather")])
    builder = (
        PromptOptimizer().set_dataset(data).add_provider("openai/task").add_metric("tool_call")
    )
    with pytest.raises(DatasetError, match=rf"^{data}:2: the reference calls 'get_time'"):
        builder.set_tools("tools.json").run("Answer.")


# --- (e) a --tool-choice naming a function a row's tools lack ---------------------------------


def test_a_tool_choice_a_rows_tools_lack(work: Path) -> None:
    data = tool_rows(work)  # row 4 offers only get_time
    shown = refused(work, data, "--tool-choice", "get_weather")
    assert shown.startswith(f"error: {data}:4: the row is not offered the function"), shown
    assert "'get_weather'" in shown and "its tools: get_time" in shown
    builder = (
        PromptOptimizer().set_dataset(data).add_provider("openai/task").add_metric("tool_call")
    )
    with pytest.raises(DatasetError, match=rf"^{data}:4: the row is not offered"):
        builder.set_tools(None, choice="get_weather").run("Answer.")
    # Run-level tools offered to plain rows: the choice is checked against them at once.
    (work / "tools.json").write_text(json.dumps([tool("get_weather")]), encoding="utf-8")
    shown = refused(work, plain_rows(work), "--tools", "tools.json", "--tool-choice", "get_time")
    assert "--tool-choice" in shown and "offered: get_weather" in shown, shown


def _re(text: str) -> str:
    import re

    return re.escape(text)
