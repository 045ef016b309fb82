"""The format guards of issue 31: a candidate whose answers break the JSON schema (or the
tool-call format) more often than the incumbent's on the minibatch is rejected before val, and
one that no longer names the schema's fields the prompt named is refused at 0 task calls; whole
iterative and gepa runs on the local endpoint, plus gepa refusing a dropped {{variable}}."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reflex import PromptOptimizer
from reflex.testing.chat import ChatRequest
from reflex.testing.endpoint import serve

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"value": {"type": "number"}, "unit": {"type": "string"}},
    "required": ["value", "unit"],
    "additionalProperties": False,
}
FORMAT = {"type": "json_schema", "json_schema": {"name": "length", "schema": SCHEMA}}
SEED = "Extract the length as JSON with the fields value and unit."


# --- the checks ----------------------------------------------------------------------------------


# --- whole runs on the local endpoint ------------------------------------------------------------


class Script:
    """The task model answers valid JSON with value 0 (half the fields right), every field right
    under PRECISE, and every field right plus a key the schema forbids under GREEDY. The reasoner
    gives its answers in turn (the system component under gepa)."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.task: list[ChatRequest] = []
        self.reasoner = 0
        self.asked: list[ChatRequest] = []

    def __call__(self, request: ChatRequest) -> str:
        if request.model == "reasoner":
            self.asked.append(request)
            answer = self.answers[min(self.reasoner, len(self.answers) - 1)]
            self.reasoner += 1
            return f"<diagnosis>d</diagnosis><edit>e</edit><prompt>{answer}</prompt>"
        self.task.append(request)
        n = int(re.findall(r"\d+", request.user)[0])
        if "GREEDY" in request.system:
            return json.dumps({"value": n, "unit": "metre", "note": "long"})
        return json.dumps({"value": n if "PRECISE" in request.system else 0, "unit": "metre"})

    def sent(self, marker: str) -> list[ChatRequest]:
        return [r for r in self.task if marker in r.system]


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    monkeypatch.chdir(tmp_path)
    rows = [
        {
            "id": f"r{n}",
            "input": f"Length: {n} metres",
            "ideal": json.dumps({"value": n, "unit": "metre"}),
        }
        for n in range(1, 21)
    ]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    yield tmp_path


def _builder(env: Path, url: str) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(env / "rows.jsonl")
        .add_provider("openai", "task", api_base=url)
        .add_metric("json_match", schema=SCHEMA, extra_keys="ignore", schema_penalty=0.25)
        .set_response_format(FORMAT)
        .set_reasoning_model("openai/reasoner", base_url=url)
        .configure(batch_size=4)
        .set_run_dir(env / "runs")
    )


DROPPED = "Extract the length. PRECISE"  # would score 1.0, but deletes the format instructions
GREEDY = SEED + " GREEDY"  # scores higher on the minibatch, with schema-invalid answers
PRECISE = SEED + " PRECISE"


def test_iterative_refuses_dropped_instructions_and_guards_the_format_before_val(
    env: Path,
) -> None:
    script = Script([DROPPED, GREEDY, PRECISE])
    with serve(responder=script) as url:
        result = _builder(env, url).set_strategy("iterative").set_max_iterations(3).run(SEED)
    first, second, third = result.iterations
    assert first.rejected is not None and "no longer names 'value'" in first.rejected
    assert [f["purpose"] for f in result.failed_proposals] == ["format instructions guard"]
    assert "dropped the output-format instructions" in result.failed_proposals[0]["error"]
    assert script.sent("PRECISE") and not any("unit" not in r.system for r in script.task)
    assert second.rejected is not None and second.rejected.startswith("format guard: 4 of 4")
    assert second.change is not None and second.change > 0  # better on the minibatch, yet
    assert len(script.sent("GREEDY")) == 4 and second.val_score is None  # minibatch only
    assert result.usage["task"]["calls"] == len(script.task)  # the ledger: what the endpoint saw
    assert third.accepted and result.best_prompt == PRECISE
    system = script.asked[0].system
    assert "the prompt names its fields 'value', 'unit'" in system  # told what is fixed


def test_gepa_refuses_dropped_instructions_and_guards_the_format(env: Path) -> None:
    script = Script([DROPPED, GREEDY, PRECISE])
    with serve(responder=script) as url:
        builder = _builder(env, url).set_strategy("gepa", minibatch_size=4)
        result = builder.set_max_iterations(3).run(SEED)
    reasons = [r.rejected or "" for r in result.iterations]
    assert "no longer names 'value'" in reasons[0] and reasons[1].startswith("format guard:")
    assert [f["purpose"] for f in result.failed_proposals] == ["format instructions guard"]
    assert not any("unit" not in r.system for r in script.task)  # DROPPED: never sent
    assert len(script.sent("GREEDY")) == 4  # its minibatch, never val
    assert result.best_prompt == PRECISE


def test_gepa_refuses_a_dropped_variable_at_zero_task_calls(env: Path) -> None:
    template = [
        {"role": "system", "content": "Extract the length as JSON with the fields value and unit."},
        {"role": "user", "content": "Text: {{input}}"},
    ]
    script = Script(["Text: the sentence"])  # the user message without {{input}}
    with serve(responder=script) as url:
        builder = _builder(env, url).set_strategy("gepa", minibatch_size=4, merge=False)
        result = builder.set_rewrite_messages("user").set_max_iterations(1).run(template)
    [failed] = result.failed_proposals
    assert failed["purpose"] == "gepa: rewrite user" and "{{input}}" in failed["error"]
    assert script.reasoner == 2 and result.iterations[0].failed
    assert all(r.user.startswith("Text: Length: ") for r in script.task)
