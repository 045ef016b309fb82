"""The run's tools, tool choice and response format (issue 31): ``--tools FILE``,
``--tool-choice``, ``--response-format FILE``, ``set_tools`` / ``set_response_format``.

Runs go to the local endpoint (``reflex.testing``): every task request carries the settings
(a row's own tools replace the run's), an answer that calls a tool comes back as its canonical
text, and a bad tools file or schema is one line, exit 2, before any request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reflex import PromptOptimizer
from reflex.cli import build_cli
from reflex.data.dataset import Dataset
from reflex.errors import ConfigurationError
from reflex.testing.chat import ChatRequest
from reflex.testing.endpoint import serve
from reflex.testing.http import Request
from reflex.toolcalls import ToolCall, parse_answer, render_answer
from reflex.types import Example

WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
CLOCK: dict[str, Any] = {"type": "function", "function": {"name": "get_time"}}
FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": "answer", "schema": {"type": "object"}},
}
CITIES = ["Paris", "Oslo", "Rome", "Lima", "Kyiv", "Doha"]


def call_for(request: ChatRequest) -> str:
    """A model that calls get_weather for the city in the question (text when no tools)."""
    city = request.user.rsplit(" ", 1)[-1]
    return render_answer("", [ToolCall("get_weather", {"city": city})])


def rows(n: int = 12, own_tools_every: int = 0) -> Dataset:
    examples = []
    for i in range(n):
        city = CITIES[i % len(CITIES)]
        tools = (CLOCK,) if own_tools_every and i % own_tools_every == 0 else ()
        call = render_answer("", [ToolCall("get_weather", {"city": city})])
        examples.append(
            Example(
                id=f"r{i}",
                messages=({"role": "user", "content": f"weather in {city}"},),
                ideal=call,
                tools=tools,
            )
        )
    return Dataset(examples, name="weather")


def builder(url: str, run_dir: Path, data: Dataset) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(data)
        .add_provider("openai/gpt-4o-mini", api_base=url)
        .add_metric("exact_match")
        .set_strategy("instructions")
        .set_run_dir(run_dir)
        .configure(max_iterations=1, early_stopping_patience=None)
    )


def bodies(captured: list[Request]) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in captured]


@pytest.fixture(autouse=True)
def openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_every_request_carries_the_run_settings_and_rows_own_tools_replace_the_runs(
    tmp_path: Path,
) -> None:
    captured: list[Request] = []
    with serve(capture=captured, responder=call_for) as url:
        result = (
            builder(url, tmp_path, rows(own_tools_every=3))
            .set_tools([WEATHER], choice="required")
            .set_response_format({"type": "json_object"})
            .run("Call the right function.")
        )
    sent = bodies(captured)
    assert sent
    for body in sent:
        names = [t["function"]["name"] for t in body["tools"]]
        assert names in (["get_weather"], ["get_time"])
        assert body["tool_choice"] == "required"
        assert body["response_format"] == {"type": "json_object"}
    asked = {b["messages"][-1]["content"]: b["tools"][0]["function"]["name"] for b in sent}
    own = {f"weather in {CITIES[i % 6]}" for i in range(12) if i % 3 == 0}
    assert {question for question, name in asked.items() if name == "get_time"} == own
    # The answers' tool_calls came back as their canonical text: exact_match scores them 1.
    assert result.final is not None and result.final.mean_score == 1.0
    [call] = parse_answer(result.final.samples[0].output)[1]
    assert call.name == "get_weather" and call.arguments["city"] in CITIES


def test_the_cli_sends_tools_tool_choice_and_the_response_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "d.jsonl"
    lines = [
        {
            "id": f"r{i}",
            "input": f"weather in {c}",
            "ideal": render_answer("", [ToolCall("get_weather", {"city": c})]),
        }
        for i, c in enumerate(CITIES * 2)
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    (tmp_path / "p.md").write_text("Call the right function.\n", encoding="utf-8")
    (tmp_path / "tools.json").write_text(json.dumps([WEATHER["function"]]), encoding="utf-8")
    (tmp_path / "fmt.json").write_text(json.dumps(FORMAT), encoding="utf-8")
    captured: list[Request] = []
    with serve(capture=captured, responder=call_for) as url:
        args = ["optimize", "d.jsonl", "p.md", "-m", "openai/gpt-4o-mini", "--api-base", url]
        args += ["-s", "instructions", "--max-iterations", "1", "--results-json", "r.json"]
        args += ["--tools", "tools.json", "--tool-choice", "get_weather"]
        res = CliRunner().invoke(build_cli(), [*args, "--response-format", "fmt.json"])
    assert res.exit_code in (0, 4), res.output
    named = {"type": "function", "function": {"name": "get_weather"}}
    for body in bodies(captured):
        assert body["tools"] == [WEATHER] and body["tool_choice"] == named
        assert body["response_format"] == FORMAT
    config = json.loads(next(tmp_path.glob(".reflex/runs/*/config.json")).read_text())
    assert config["tools"] == [WEATHER] and config["response_format"] == FORMAT


@pytest.mark.parametrize(
    ("flag", "content", "words"),
    [
        ("--tools", '{"name": "get_weather"}', ["bad.json:1: the tools are a dict, not a list"]),
        ("--tools", "[1, 2]", ["bad.json:1: tools[0] is not a function schema"]),
        ("--tools", '[{"name": "f", "parameters": {"type": "dict"}}]', ["not valid JSON Schema"]),
        ("--tools", '[\n{"name": "f",}\n]', ["bad.json:2", "not valid JSON"]),
        (
            "--response-format",
            '{"type": "json_schema", "json_schema": {"schema": {"type": 3}}}',
            ["bad.json:1: json_schema.schema is not valid JSON Schema"],
        ),
        ("--response-format", '{"type": "yaml"}', ["bad.json", "'yaml'"]),
        ("--tool-choice", "get_wether", ["--tool-choice", "'get_wether'", "offered: get_weather"]),
    ],
)
def test_bad_tools_and_schemas_are_one_line_exit_2_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str, content: str, words: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    rows = [{"id": f"r{i}", "input": "weather in Oslo", "ideal": "x"} for i in range(6)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "p.md").write_text("Call the right function.\n", encoding="utf-8")
    (tmp_path / "bad.json").write_text(content, encoding="utf-8")
    (tmp_path / "tools.json").write_text(json.dumps([WEATHER]), encoding="utf-8")
    captured: list[Request] = []
    with serve(capture=captured) as url:
        args = ["optimize", "d.jsonl", "p.md", "-m", "openai/gpt-4o-mini", "--api-base", url]
        if flag == "--tool-choice":
            args += ["--tools", "tools.json", flag, content]
        else:
            args += [flag, "bad.json"]
        res = CliRunner().invoke(build_cli(), args)
    assert res.exit_code == 2, res.output
    assert captured == []  # no call was paid
    line = res.output.strip()
    assert "\n" not in line and "Traceback" not in line, res.output
    for word in words:
        assert word in line, line


def test_builder_settings_are_checked_where_they_are_made(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="set_tools: the tools are a dict"):
        PromptOptimizer().set_tools({"name": "f"})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="offered: get_weather"):
        PromptOptimizer().set_tools([WEATHER], choice="nope")
    missing = tmp_path / "none.json"
    with pytest.raises(ConfigurationError, match="not found"):
        PromptOptimizer().set_response_format(missing)
    opt = (
        PromptOptimizer()
        .set_tools([WEATHER["function"]], choice="auto")
        .set_response_format(FORMAT["json_schema"]["schema"])
    )
    assert opt._config.tools == [WEATHER] and opt._config.tool_choice == "auto"
    assert opt._config.response_format == FORMAT
    cleared = opt.set_tools(None).set_response_format(None)
    assert cleared._config.tools is None and cleared._config.response_format is None


def test_the_fake_model_gets_the_settings_and_answers_calls_as_tool_calls(tmp_path: Path) -> None:
    from reflex.testing import FakeModel

    def weather(request: Any) -> str:
        return render_answer("", [ToolCall("get_weather", {"city": request.user.split()[-1]})])

    fake = FakeModel(weather).install()
    result = (
        PromptOptimizer()
        .set_dataset(rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("instructions")
        .set_run_dir(tmp_path)
        .configure(max_iterations=1, early_stopping_patience=None)
        .set_tools([WEATHER], choice="auto")
        .set_response_format({"type": "json_object"})
        .run("Call the right function.")
    )
    assert fake.requests and all(r.params["tools"] == [WEATHER] for r in fake.requests)
    assert all(r.params["tool_choice"] == "auto" for r in fake.requests)
    assert all(r.params["response_format"] == {"type": "json_object"} for r in fake.requests)
    assert result.final is not None and result.final.mean_score == 1.0


def test_rows_with_earlier_tool_call_turns_are_sent_faithfully(tmp_path: Path) -> None:
    turn = {"id": "call_0", "type": "function", "function": {"name": "get_weather"}}
    turn["function"]["arguments"] = '{"city": "Oslo"}'  # type: ignore[index]
    conversation = (
        {"role": "user", "content": "weather in Oslo"},
        {"role": "assistant", "content": None, "tool_calls": [turn]},
        {"role": "tool", "tool_call_id": "call_0", "content": "rain"},
        {"role": "user", "content": "and in Rome"},
    )
    ideal = render_answer("", [ToolCall("get_weather", {"city": "Rome"})])
    data = Dataset(
        [Example(id=f"r{i}", messages=conversation, ideal=ideal) for i in range(6)],  # type: ignore[arg-type]
        name="turns",
    )
    captured: list[Request] = []
    with serve(capture=captured, responder=call_for) as url:
        result = builder(url, tmp_path, data).set_tools([WEATHER]).run("Use the tools.")
    for body in bodies(captured):  # candidates add rules (instructions) after the seed's text
        assert body["messages"][0]["role"] == "system"
        assert body["messages"][0]["content"].startswith("Use the tools.")
        assert body["messages"][2] == {"role": "assistant", "tool_calls": [turn]}
        assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_0", "content": "rain"}
    assert result.final is not None and result.final.mean_score == 1.0
