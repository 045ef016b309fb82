"""End to end on the local endpoint: an optimize run on tool-call rows with ``--metric tool_call``.

The endpoint answers with the row's expected call once the prompt has been edited (a longer
system prompt or demos as chat turns) and in prose before, so the seed scores 0 and a candidate
can gain. While requests carry no ``tools`` the call comes back as the canonical answer text in
``content``; once they do (the request side of issue 31), as the message's ``tool_calls``
(:mod:`reflex.testing.chat`), which the model channel renders into the same answer text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reflex.cli import main
from reflex.data.dataset import load_dataset
from reflex.testing.chat import completion
from reflex.testing.endpoint import ChatRequest, serve
from reflex.toolcalls import ToolCall, parse_answer, render_answer

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tool_calls"
SEED = "Call the right function."


def _conversation(row: str) -> str:
    """``row`` with an earlier call and its result before the request (a multi-turn row)."""
    data = json.loads(row)
    earlier = dict(data["messages"][-1], content=None)
    earlier["tool_calls"] = [dict(earlier["tool_calls"][0], id="call_earlier")]
    result = {"role": "tool", "tool_call_id": "call_earlier", "content": "42"}
    again = {"role": "user", "content": "Once more, please: " + data["messages"][0]["content"]}
    data["messages"][-1:-1] = [earlier, result, again]
    data["id"] += "-again"
    return json.dumps(data)


def _rows(work: Path, count: int, conversations: int = 0) -> Path:
    lines = (EXAMPLE / "dataset.jsonl").read_text(encoding="utf-8").splitlines()[:count]
    lines += [_conversation(line) for line in lines[:conversations]]
    path = work / "calls.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _optimize(work: Path, data: Path, url: str, *extra: str) -> int:
    (work / "prompt.md").write_text(SEED + "\n", encoding="utf-8")
    argv = ["optimize", str(data), str(work / "prompt.md"), "-m", "openai/task"]
    argv += ["--api-base", url, "-s", "auto", "--max-iterations", "2"]
    argv += ["--metric", "tool_call,strings=bfcl", "--run-dir", str(work / ".reflex")]
    try:
        main([*argv, *extra])
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_an_optimize_run_scores_tool_calls_from_the_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    data = _rows(tmp_path, 24, conversations=4)
    rows = load_dataset(data)
    expected = {row.input: row.ideal for row in rows}
    turns_of = {row.input: len(row.messages) for row in rows}
    seen: list[ChatRequest] = []

    def respond(request: ChatRequest) -> str:
        seen.append(request)
        demos = len(request.messages) > 1 + turns_of.get(request.user, 1)
        edited = len(request.system) > len(SEED) or demos
        call = expected.get(request.user)
        return call if edited and call else "I would compute that for you."

    results = tmp_path / "result.json"
    with serve(responder=respond) as url:
        code = _optimize(tmp_path, data, str(url), "--results-json", str(results))
    assert code == 0
    assert seen and {r.model for r in seen} == {"task"}
    tools = {row.input: [dict(t) for t in row.tools] for row in rows}
    assert all(r.params.get("tools") == tools[r.user] for r in seen)  # each row's own tools
    # Multi-turn rows reach the endpoint whole: the earlier call and its result, ids and all.
    # (Demos of calls are tool turns too, with ids demo_<n>_<i>: tests/test_demo_tool_turns.py.)
    turns = [
        r.messages for r in seen if any(m.get("tool_call_id") == "call_earlier" for m in r.messages)
    ]
    assert turns, "no conversation row was sent with its tool turns"
    for messages in turns:
        roles = [m["role"] for m in messages]
        assert roles[-4:] == ["user", "assistant", "tool", "user"], roles
        assert messages[-3]["tool_calls"][0]["id"] == "call_earlier"
        assert messages[-2]["tool_call_id"] == "call_earlier" and messages[-2]["content"] == "42"
    result = json.loads(results.read_text(encoding="utf-8"))
    assert result["completed"]
    assert result["baseline"]["mean_score"] == 0.0  # prose: no tool call
    assert result["final"]["mean_score"] == 1.0  # the expected calls
    samples = [s for s in result["final"]["samples"] if s["output"]]
    assert samples and all(parse_answer(s["output"])[1] for s in samples)


def test_a_reference_call_to_a_tool_not_offered_stops_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    data = _rows(tmp_path, 3)
    rows = data.read_text(encoding="utf-8").splitlines()
    bad = json.loads(rows[1])
    bad["messages"][-1]["tool_calls"][0]["function"]["name"] = "math.nope"
    rows[1] = json.dumps(bad)
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    seen: list[ChatRequest] = []
    with serve(responder=lambda r: seen.append(r) or "x") as url:
        code = _optimize(tmp_path, data, str(url))
    assert code == 2 and seen == []
    err = capsys.readouterr().err
    assert f"{data}:2: the reference calls 'math.nope'" in err, err


def test_the_endpoint_answers_with_tool_calls_when_the_request_offers_tools() -> None:
    text = render_answer("Sure.", [ToolCall("math.hypot", {"x": 4, "y": 5})])
    messages = ({"role": "user", "content": "hi"},)
    offered = ChatRequest("m", messages, {"tools": [{"type": "function"}]})
    message = completion(offered, text)["choices"][0]["message"]  # type: ignore[index,call-overload]
    assert message["content"] == "Sure."
    assert message["tool_calls"][0]["function"] == {
        "name": "math.hypot",
        "arguments": json.dumps({"x": 4, "y": 5}),
    }
    plain = completion(ChatRequest("m", messages), text)["choices"][0]["message"]  # type: ignore[index,call-overload]
    assert plain == {"role": "assistant", "content": text}


def test_the_runs_tools_file_checks_plain_rows_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    hypot = {"type": "function", "function": {"name": "math.hypot", "parameters": {}}}
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([hypot]), encoding="utf-8")
    call = render_answer(None, [ToolCall("math.hypot", {"x": 4, "y": 5})])
    wrong = render_answer(None, [ToolCall("math.sqrt", {"x": 4})])
    rows = [{"id": f"r{i}", "input": f"4 and 5, case {i}", "ideal": call} for i in range(6)]
    rows[4]["ideal"] = wrong
    data = tmp_path / "plain.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    seen: list[ChatRequest] = []
    with serve(responder=lambda r: seen.append(r) or "x") as url:
        code = _optimize(tmp_path, data, str(url), "--tools", str(tools))
    assert code == 2 and seen == []
    err = capsys.readouterr().err
    assert f"{data}:5: the reference calls 'math.sqrt'" in err, err
