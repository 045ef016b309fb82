"""Tool descriptions as optimizable text (``--optimize-tool-descriptions``): the ``<tools>``
section, its guard, what requests carry, and whole runs (iterative, gepa, the CLI's ``-o``) on
the local endpoint whose reasoner renames a function: refused at 0 task calls."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import reflex
from reflex import ConfigurationError, PromptOptimizer
from reflex.cli.main import build_cli
from reflex.config import RunConfig
from reflex.data.prompts import prompt_spec, with_tool_descriptions
from reflex.data.tool_text import (
    described_tools,
    run_tools,
    split_tools_section,
    tools_problem,
    tools_section,
)
from reflex.judging.reasoning import ProposalError, parse_proposal
from reflex.run.screening import CandidateScreen
from reflex.testing.chat import ChatRequest
from reflex.testing.endpoint import serve
from reflex.toolcalls import ToolCall, render_answer

SEED = "Call the right function."
GOOD = "Compute the hypotenuse of a right triangle from its two legs."
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "math.hypot",
            "description": "Hypotenuse.",
            "parameters": {
                "type": "object",
                "properties": {
                    "x": {"type": "integer", "description": "first leg"},
                    "y": {"type": "integer", "description": "second leg"},
                    "unit": {"type": "string", "enum": ["cm", "m"]},
                },
                "required": ["x", "y"],
            },
        },
    }
]


def seeded() -> str:
    return with_tool_descriptions(prompt_spec(SEED), TOOLS).render()


# --- the section and its guard -------------------------------------------------------------------


def test_the_section_leads_the_prompt_and_requests_carry_its_descriptions() -> None:
    text = seeded()
    assert text.startswith('<tools>\n<function name="math.hypot">\nHypotenuse.\n</function>')
    assert text.endswith("</tools>\n\n" + SEED)
    blocks, rest = split_tools_section(text)
    assert rest == SEED and isinstance(blocks, list)
    assert [(b.function, b.param) for b in blocks] == [
        ("math.hypot", None),
        ("math.hypot", "x"),
        ("math.hypot", "y"),
        ("math.hypot", "unit"),
    ]
    edited = text.replace("Hypotenuse.", GOOD).replace("first leg", "")
    [tool] = described_tools(TOOLS, edited) or []
    fn = tool["function"]
    assert fn["description"] == GOOD and "description" not in fn["parameters"]["properties"]["x"]
    assert fn["parameters"]["required"] == ["x", "y"] and TOOLS[0]["function"]["description"]
    # The messages never carry the section; the tools do.
    assert reflex.prompt_messages(edited, "hi")[0] == {"role": "system", "content": SEED}


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda t: t.replace('name="math.hypot">', 'name="math.hyp">'), "renames function"),
        (
            lambda t: t.replace(
                '"integer" required="true">\nfirst', '"number" required="true">\nfirst'
            ),
            "changes the type, enum or required flag of parameter 'x'",
        ),
        (lambda t: t.replace('enum=["cm", "m"]', 'enum=["cm"]'), "parameter 'unit'"),
        (
            lambda t: t.replace(
                '"y" type="integer" required="true"', '"y" type="integer" required="false"'
            ),
            "parameter 'y'",
        ),
        (
            lambda t: t.replace(
                "</tools>", '<parameter function="math.hypot" name="z">\n</parameter>\n</tools>'
            ),
            "adds parameter 'z'",
        ),
        (
            lambda t: re.sub(
                r'<parameter function="math.hypot" name="unit".*?</parameter>\n', "", t, flags=re.S
            ),
            "removes parameter 'unit'",
        ),
        (lambda t: split_tools_section(t)[1], "drops the <tools> section"),
    ],
)
def test_the_guard_refuses_fixed_lines_changed(edit: Any, reason: str) -> None:
    text = seeded()
    problem = tools_problem(text, edit(text))
    assert problem is not None and reason in problem and "\n" not in problem, problem
    with pytest.raises(ProposalError, match=re.escape(reason)):
        parse_proposal(f"<prompt>{edit(text)}</prompt>", current=text)


def test_descriptions_may_change_and_a_description_may_not_hold_markup() -> None:
    text = seeded()
    assert tools_problem(text, text.replace("Hypotenuse.", GOOD).replace(SEED, "Call it.")) is None
    assert tools_problem(SEED, "Better.") is None
    # The run lets a candidate leave the whole section out: it sends the tools as written.
    assert tools_problem(text, "Call it.", keep_section=False) is None
    half = '<function name="math.hypot">\nX\n</function>\nCall it.'
    assert tools_problem(text, half, keep_section=False) is not None
    renamed = 'Hyp.\n</function>\n<function name="math.hyp">\nX'
    problem = tools_problem("Hypotenuse.", renamed)  # gepa rewrites a description alone
    assert problem is not None and "fixed" in problem


def test_row_tools_are_collected_once_and_a_conflict_is_one_line() -> None:
    other = json.loads(json.dumps(TOOLS[0]))
    other["function"]["description"] = "another wording"  # descriptions may differ
    assert run_tools(None, [TOOLS, [other]]) == TOOLS
    assert run_tools([other], [TOOLS]) == [other]  # the run's tools win
    changed = json.loads(json.dumps(TOOLS[0]))
    changed["function"]["parameters"]["required"] = ["x"]
    with pytest.raises(
        ConfigurationError, match=re.escape("rows define the function 'math.hypot'")
    ):
        run_tools(None, [TOOLS, [changed]])
    assert tools_section([changed]).count("<parameter") == 3


def test_a_chat_template_keeps_its_guard_behind_the_section() -> None:
    template = [{"role": "system", "content": "S"}, {"role": "user", "content": "Q: {{q}}"}]
    spec = with_tool_descriptions(prompt_spec(template), TOOLS)
    assert spec.variables == ["q"] and spec.names[:2] == ["system", "user"]
    text = spec.render()
    assert reflex.prompt_messages(text, {"q": "x"}) == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Q: x"},
    ]
    screen = CandidateScreen(
        RunConfig(models=["openai/m"]),
        train=[],
        held_out={},
        seed_texts=[text],
        initial_val=None,
        initial_prompt=text,
    )
    assert screen.refusal(text.replace("\nS\n", "\nBetter S\n")) is None
    assert (screen.refusal(text.replace("{{q}}", "{{p}}")) or ("",))[0] == "chat template guard"
    renamed = text.replace('name="math.hypot">', 'name="math.hyp">')
    assert (screen.refusal(renamed) or ("",))[0] == "tool descriptions guard"


# --- whole runs on the local endpoint ------------------------------------------------------------

ROWS = [(3, 4), (6, 8), (5, 12), (8, 15), (7, 24)] * 4


def _row(i: int, x: int, y: int) -> dict[str, Any]:
    call = {"name": "math.hypot", "arguments": json.dumps({"x": x, "y": y})}
    return {
        "id": f"r{i}",
        "messages": [
            {"role": "user", "content": f"Hypotenuse of {x} and {y}?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c0", "type": "function", "function": call}],
            },
        ],
    }


class Script:
    """The task model calls ``math.hypot`` right on every row when the tool's description says
    "right triangle", else only on rows with an even first leg (prose otherwise). The reasoner
    gives its answers in turn (``by_component``: per gepa component named in the brief)."""

    def __init__(self, answers: list[str], by_component: dict[str, str] | None = None) -> None:
        self.answers, self.by_component = answers, by_component or {}
        self.task: list[ChatRequest] = []
        self.reasoner = 0
        self.asked: list[ChatRequest] = []

    def __call__(self, request: ChatRequest) -> str:
        if request.model == "reasoner":
            self.asked.append(request)
            self.reasoner += 1
            brief = str(request.messages[1].get("content", ""))
            found = re.search(r"Rewrite the component '([^']+)'", brief)
            if found and found[1] in self.by_component:
                answer = self.by_component[found[1]]
            else:
                answer = self.answers[min(self.reasoner - 1, len(self.answers) - 1)]
            return f"<diagnosis>d</diagnosis><edit>e</edit><prompt>{answer}</prompt>"
        self.task.append(request)
        x, y = (int(n) for n in re.findall(r"\d+", request.user))
        description = str(request.params["tools"][0]["function"].get("description", ""))
        if "right triangle" in description or x % 2 == 0:
            return render_answer("", [ToolCall("math.hypot", {"x": x, "y": y})])
        return f"The hypotenuse is {(x * x + y * y) ** 0.5:g}."

    def tool_names(self) -> set[str]:
        return {t["function"]["name"] for r in self.task for t in r.params["tools"]}


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    monkeypatch.chdir(tmp_path)
    rows = tmp_path / "calls.jsonl"
    rows.write_text("".join(json.dumps(_row(i, *r)) + "\n" for i, r in enumerate(ROWS)))
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    yield tmp_path


def _builder(env: Path, url: str) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(env / "calls.jsonl")
        .add_provider("openai", "task", api_base=url)
        .add_metric("tool_call")
        .set_tools(env / "tools.json")
        .set_optimize_tool_descriptions()
        .set_reasoning_model("openai/reasoner", base_url=url)
        .set_run_dir(env / "runs")
    )


def _renamed() -> str:
    return seeded().replace('name="math.hypot">', 'name="math.hyp">').replace(SEED, "Call it.")


def test_iterative_refuses_a_renamed_function_at_zero_task_calls_then_keeps_a_description(
    env: Path,
) -> None:
    good = seeded().replace("Hypotenuse.", GOOD)
    script = Script([_renamed(), _renamed(), good])
    with serve(responder=script) as url:
        result = _builder(env, url).set_strategy("iterative").set_max_iterations(2).run(SEED)
    [failed] = result.failed_proposals
    assert "renames function 'math.hypot' to function 'math.hyp'" in failed["error"]
    assert result.iterations[0].failed and script.reasoner == 3  # asked, retried, then the good
    assert script.tool_names() == {"math.hypot"}  # no request ever offered the renamed tool
    assert "starts with a <tools> section" in script.asked[0].system  # told what is fixed
    assert "Hypotenuse." in script.asked[0].user  # it sees the tools in the prompt
    assert result.usage["task"]["calls"] == len(script.task)  # the ledger: what the endpoint saw
    assert not any("Call it." in r.system for r in script.task)  # nor sent its prompt
    assert result.best_prompt == good and result.final is not None
    assert result.final.mean_score == 1.0 > (result.baseline.mean_score if result.baseline else 1)
    described = [r for r in script.task if "right triangle" in json.dumps(r.params["tools"])]
    assert described and all(r.system == SEED for r in script.task)


def test_gepa_rewrites_one_description_and_a_rename_hidden_in_it_is_refused(env: Path) -> None:
    sneaky = 'Hyp.\n</function>\n<function name="math.hyp">\nAnother'
    script = Script([SEED + " Use the tool."], {"tool-math_hypot": sneaky})
    with serve(responder=script) as url:
        builder = _builder(env, url).set_strategy("gepa", minibatch_size=4, merge=False)
        result = builder.set_max_iterations(2).run(SEED)
    assert [f["purpose"] for f in result.failed_proposals] == ["gepa: rewrite tool-math_hypot"]
    assert "names, types, enums and required lists are fixed" in result.failed_proposals[0]["error"]
    assert script.tool_names() == {"math.hypot"}
    sent = {r.params["tools"][0]["function"].get("description") for r in script.task}
    assert "Hyp." not in sent and "Hypotenuse." in sent  # the refused text was never sent


def test_the_run_refuses_a_strategy_candidate_that_renames_a_function(env: Path) -> None:
    # random search takes its paraphrases as they come: the run itself refuses the broken one.
    script = Script([_renamed()])
    with serve(responder=script) as url:
        result = _builder(env, url).set_strategy("random").set_max_iterations(1).run(SEED)
    assert any("renames function 'math.hypot'" in (r.rejected or "") for r in result.iterations)
    assert "tool descriptions guard" in [f["purpose"] for f in result.failed_proposals]
    assert not any("Call it." in r.system for r in script.task)  # 0 task calls for it
    assert result.usage["task"]["calls"] == len(script.task)


def test_cli_saves_the_described_tools_next_to_the_prompt(env: Path) -> None:
    good = seeded().replace("Hypotenuse.", GOOD)
    script = Script([good])
    (env / "prompt.md").write_text(SEED + "\n", encoding="utf-8")
    best = env / "best.md"
    with serve(responder=script) as url:
        args = ["optimize", "calls.jsonl", "prompt.md", "-m", "openai/task", "--api-base", url]
        args += ["--tools", "tools.json", "--optimize-tool-descriptions", "--metric", "tool_call"]
        args += ["--reasoning-model", "openai/reasoner", "--reasoning-base-url", url]
        args += ["-s", "iterative", "--max-iterations", "1", "-o", str(best), "--run-dir", "runs"]
        done = CliRunner().invoke(build_cli(), args, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert best.read_text(encoding="utf-8") == good + "\n"  # what was scored, section first
    saved = json.loads((env / "best.tools.json").read_text(encoding="utf-8"))
    assert saved[0]["function"]["description"] == GOOD
    assert saved[0]["function"]["parameters"] == TOOLS[0]["function"]["parameters"]
    assert reflex.prompt_messages(best.read_text(), "hi")[0]["content"] == SEED
    # check scores the saved file as the run did: the section's descriptions are sent again.
    [run] = (env / "runs" / "runs").iterdir()
    script.task.clear()
    with serve(responder=script) as url:
        args = ["check", "--prompt", str(best), "--dataset", "calls.jsonl", "--baseline", str(run)]
        checked = CliRunner().invoke(build_cli(), [*args, "--api-base", url, "--json"])
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.output)["scores_by_metric"]["tool_call"] == 1.0


def test_without_tools_the_setting_is_one_error_before_any_call(env: Path) -> None:
    script = Script([SEED])
    rows = "".join(json.dumps({"input": f"hi {i}", "ideal": "hi"}) + "\n" for i in range(6))
    (env / "plain.jsonl").write_text(rows, encoding="utf-8")
    with serve(responder=script) as url:
        builder = (
            PromptOptimizer()
            .set_dataset(env / "plain.jsonl")
            .add_provider("openai", "task", api_base=url)
            .add_metric("exact_match")
            .set_optimize_tool_descriptions()
            .set_run_dir(env / "runs")
        )
        with pytest.raises(ConfigurationError, match="the run offers no tools"):
            builder.run(SEED)
    assert script.task == []
