"""Chat templates with {{variables}}: parsing, rendering, guards, and whole runs on the endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import reflex
from reflex import ConfigurationError, PromptOptimizer
from reflex.cli.main import build_cli
from reflex.data.dataset import load_dataset
from reflex.data.demos import render_chat_demos, saved_template
from reflex.data.prompts import load_prompt_file, prompt_spec
from reflex.data.templates import parse_template, placeholders, template_problem
from reflex.errors import DatasetError, MissingInputError
from reflex.judging.reasoning import ProposalError, parse_proposal
from reflex.testing.chat import ChatRequest
from reflex.testing.endpoint import serve

TEMPLATE = [
    {"role": "system", "content": "Classify the sentiment of the word. {not a variable}"},
    {"role": "user", "content": "Word: {{ word }}\nHint: {{hint}}"},
]
ROWS = [
    {"id": f"r{i}", "word": word, "hint": "none", "ideal": label}
    for i, (word, label) in enumerate(
        [("great", "positive"), ("awful", "negative"), ("lovely", "positive"), ("bad", "negative")]
        * 5
    )
]
GOOD_SYSTEM = "Classify the sentiment of the word. Answer positive or negative."


def text() -> str:
    return prompt_spec(TEMPLATE).render()


# --- parsing and rendering ---------------------------------------------------------------------


def test_the_string_form_round_trips_and_names_the_components() -> None:
    spec = prompt_spec(TEMPLATE)
    assert spec.fmt == "chat" and spec.names == ["system", "user"]
    assert spec.variables == ["word", "hint"]
    assert parse_template(spec.render()) == TEMPLATE
    assert text().startswith('<message role="system">\n')
    assert parse_template("Classify the word.") is None  # plain text stays plain
    repeated = prompt_spec([*TEMPLATE, {"role": "assistant", "content": "ok"}, TEMPLATE[1]])
    assert repeated.names == ["system", "user_1", "assistant", "user_2"]


def test_rows_fill_the_placeholders_and_single_braces_stay() -> None:
    sent = reflex.prompt_messages(TEMPLATE, {"word": "great", "hint": "{x}"})
    assert sent == [
        {"role": "system", "content": "Classify the sentiment of the word. {not a variable}"},
        {"role": "user", "content": "Word: great\nHint: {x}"},
    ]
    assert reflex.prompt_messages(text(), {"word": "great", "hint": "{x}"}) == sent
    with pytest.raises(ValueError, match="'hint'"):
        reflex.prompt_messages(TEMPLATE, {"word": "great"})
    row = {"w": "great", "hint": "{x}"}  # a row whose field names differ (--var word=w)
    assert reflex.prompt_messages(TEMPLATE, row, fields={"word": "w"}) == sent


def test_text_after_the_messages_joins_the_system_message_and_demos_render_through_user() -> None:
    demos = render_chat_demos([(json.dumps({"word": "nice", "hint": "h"}), "positive")])
    prompt = text() + "\n\nAlways answer in lower case.\n\n" + demos
    sent = reflex.prompt_messages(prompt, {"word": "bad", "hint": "none"})
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[0]["content"].endswith("{not a variable}\n\nAlways answer in lower case.")
    assert sent[1]["content"] == "Word: nice\nHint: h" and sent[2]["content"] == "positive"
    assert sent[3]["content"] == "Word: bad\nHint: none"
    saved = saved_template(prompt)
    assert saved is not None and saved[-1]["content"] == TEMPLATE[1]["content"]
    assert reflex.prompt_messages(saved, {"word": "bad", "hint": "none"}) == sent


def test_a_json_prompt_file_in_mlflow_form_is_a_template(tmp_path: Path) -> None:
    path = tmp_path / "prompt.json"
    path.write_text(json.dumps(TEMPLATE), encoding="utf-8")
    assert load_prompt_file(path).messages == TEMPLATE
    path.write_text(json.dumps([{"role": "robot", "content": "x"}]), encoding="utf-8")
    with pytest.raises(ConfigurationError, match=rf"^{path}: message 0 has role 'robot'"):
        load_prompt_file(path)
    path.write_text(json.dumps([{"role": "system", "content": "{{x}}"}]), encoding="utf-8")
    with pytest.raises(ConfigurationError, match="no user message"):
        load_prompt_file(path)


@pytest.mark.parametrize(
    ("user", "reason"),
    [
        ("Word: {{word}}", "drops {{hint}}"),
        ("Word: {{term}}\nHint: {{hint}}", "renames {{word}} to {{term}}"),
        ("Word: {{word}}\nHint: {{hint}} {{extra}}", "invents {{extra}}"),
        ("Word: {{word}} {{word}}", "drops {{hint}}"),  # duplicated away
        ("Word: {{word}}\nHint: {{hint}} {{hint}}", "uses {{hint}} 2 time(s)"),
    ],
)
def test_the_guard_refuses_a_changed_placeholder(user: str, reason: str) -> None:
    candidate = prompt_spec([TEMPLATE[0], {"role": "user", "content": user}]).render()
    problem = template_problem(text(), candidate)
    assert problem is not None and reason in problem and "\n" not in problem
    with pytest.raises(ProposalError, match="keep every <message"):
        parse_proposal(f"<prompt>{candidate}</prompt>", current=text())


def test_the_guard_refuses_lost_structure_and_frozen_messages() -> None:
    assert "no longer a chat template" in str(template_problem(text(), "Classify the word."))
    swapped = prompt_spec(TEMPLATE[::-1]).render()
    assert "changes the messages" in str(template_problem(text(), swapped))
    edited = text().replace("Word:", "The word:")
    assert template_problem(text(), edited) is None
    assert "keeps fixed" in str(template_problem(text(), edited, editable=["system"]))
    assert parse_proposal(f"<prompt>{edited}</prompt>", current=text()).prompt == edited
    assert placeholders("{{a}} {b} {{ b }}") == ["a", "b"]


# --- rows -------------------------------------------------------------------------------------


def test_rows_need_no_input_and_a_missing_variable_is_file_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:2]), encoding="utf-8")
    with pytest.raises(MissingInputError, match=rf"^{path}:1: no input"):
        load_dataset(path)
    data = load_dataset(path, variables={"word": "word", "hint": "hint"})
    assert data[0].variables == {"word": "great", "hint": "none"}
    assert data[0].ideal == "positive" and json.loads(data[0].input)["word"] == "great"
    with pytest.raises(DatasetError, match=rf"^{path}:1: field 'w' for the template variable"):
        load_dataset(path, variables={"word": "w", "hint": "hint"})


# --- whole runs on the local endpoint ----------------------------------------------------------


class Script:
    """The task model is right on every row only under GOOD_SYSTEM; the reasoner proposes the
    scripted prompts in turn."""

    def __init__(self, proposals: list[str]) -> None:
        self.proposals = proposals
        self.task: list[ChatRequest] = []
        self.reasoner = 0

    def __call__(self, request: ChatRequest) -> str:
        if request.model == "reasoner":
            answer = self.proposals[min(self.reasoner, len(self.proposals) - 1)]
            self.reasoner += 1
            return f"<diagnosis>d</diagnosis><edit>e</edit><prompt>{answer}</prompt>"
        self.task.append(request)
        word = request.user.split("\n")[0].removeprefix("Word: ")
        if "Answer positive or negative" not in request.system:
            return "positive" if word == "great" else "unsure"  # right on one row of four
        return "negative" if word in ("awful", "bad") else "positive"


def good() -> str:
    return prompt_spec([{"role": "system", "content": GOOD_SYSTEM}, TEMPLATE[1]]).render()


def bad(user: str) -> str:
    return prompt_spec(
        [{"role": "system", "content": GOOD_SYSTEM}, {"role": "user", "content": user}]
    ).render()


@pytest.fixture
def rows_file(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


def _reflective(rows_file: Path, url: str, env: Path) -> PromptOptimizer:
    """The rows, exact match, and task and reasoning models both at the endpoint ``url``."""
    return (
        PromptOptimizer()
        .set_dataset(rows_file)
        .add_provider("openai", "task", api_base=url)
        .add_metric("exact_match")
        .set_reasoning_model("openai/reasoner", base_url=url)
        .set_run_dir(env / "runs")
    )


def _no_raw_placeholders(script: Script) -> None:
    assert script.task
    for request in script.task:
        for message in request.messages:
            assert "{{" not in str(message.get("content")), message


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-none")
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def test_cli_run_sends_rendered_messages_and_saves_the_template(rows_file: Path, env: Path) -> None:
    prompt = env / "prompt.json"
    prompt.write_text(json.dumps(TEMPLATE), encoding="utf-8")
    script = Script([good()])
    best, out = env / "best.json", env / "result.json"
    with serve(responder=script) as url:
        args = ["optimize", str(rows_file), str(prompt), "-m", "openai/task", "--api-base", url]
        args += ["--reasoning-model", "openai/reasoner", "--reasoning-base-url", url]
        args += ["--max-iterations", "1", "-o", str(best), "--results-json", str(out)]
        args += ["--accept", "any"]  # a few val rows: the template is under test, not the gate
        args += ["--run-dir", str(env / "runs")]
        result = CliRunner().invoke(build_cli(), args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    _no_raw_placeholders(script)
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["final"]["mean_score"] == 1.0 > data["baseline"]["mean_score"]
    saved = json.loads(best.read_text(encoding="utf-8"))
    assert saved == [{"role": "system", "content": GOOD_SYSTEM}, TEMPLATE[1]]
    sent = reflex.prompt_messages(saved, {"word": "awful", "hint": "none"})
    assert any(list(r.messages) == sent for r in script.task)  # exactly what was scored


def test_cli_missing_variable_is_exit_2_before_any_call(rows_file: Path, env: Path) -> None:
    prompt = env / "prompt.json"
    prompt.write_text(json.dumps(TEMPLATE), encoding="utf-8")
    script = Script([good()])
    with serve(responder=script) as url:
        args = ["optimize", str(rows_file), str(prompt), "-m", "openai/task", "--api-base", url]
        args += ["--var", "hint=clue", "--run-dir", str(env / "runs")]
        result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 2
    assert f"{rows_file}:1: field 'clue' for the template variable {{{{hint}}}}" in result.output
    assert script.task == [] and script.reasoner == 0


def test_a_reasoner_that_breaks_the_template_is_refused_at_zero_task_calls(
    rows_file: Path, env: Path
) -> None:
    # Each answer is refused and retried once, then recorded as a failed proposal.
    proposals = [
        *[bad("Word: {{word}}")] * 2,  # drops {{hint}}
        *[bad("Word: {{term}}\nHint: {{hint}}")] * 2,  # renames
        *[bad("Word: {{word}}\nHint: {{hint}} {{mood}}")] * 2,  # invents
    ]
    script = Script(proposals)
    with serve(responder=script) as url:
        optimizer = _reflective(rows_file, url, env).set_max_iterations(4)
        result = optimizer.run(TEMPLATE)
    _no_raw_placeholders(script)
    refused = [f["error"] for f in result.failed_proposals]
    assert any("drops {{hint}}" in e for e in refused), refused
    assert any("renames {{word}} to {{term}}" in e for e in refused), refused
    assert any("invents {{mood}}" in e for e in refused), refused
    assert script.reasoner == 6  # each refused, retried once, refused again
    # Every broken proposal carries GOOD_SYSTEM: no task call was ever made with one.
    assert all("Answer positive" not in r.system for r in script.task)
    assert result.best_prompt == text()


def _check_and_export(run: Path, rows_file: Path, env: Path) -> None:
    """``check`` and ``export`` on a template run bind the rows again and send rendered turns."""
    prompt = env / "prompt.json"
    prompt.write_text(json.dumps(TEMPLATE), encoding="utf-8")
    cli = build_cli()
    args = ["check", "--prompt", str(prompt), "--dataset", str(rows_file), "--baseline", str(run)]
    checked = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert checked.exit_code == 0, checked.output
    out = env / "train.jsonl"
    args = ["export", str(run), "--training-jsonl", str(out), "--allow-calls"]
    exported = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert exported.exit_code == 0, exported.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert rows and all(r["messages"][1]["content"].startswith("Word: ") for r in rows)
    assert "{{" not in out.read_text(encoding="utf-8")


def test_the_safety_net_refuses_a_strategy_candidate_before_any_call(
    rows_file: Path, env: Path
) -> None:
    # random search takes its paraphrases as they come: the run refuses the broken ones.
    script = Script([bad("Word: {{word}}")])
    with serve(responder=script) as url:
        builder = _reflective(rows_file, url, env).set_strategy("random")
        result = builder.set_max_iterations(1).run(TEMPLATE)
    assert any("drops {{hint}}" in (r.rejected or "") for r in result.iterations)
    assert any(f["purpose"] == "chat template guard" for f in result.failed_proposals)
    assert all("Answer positive" not in r.system for r in script.task)
    assert result.best_prompt == text()


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "template"


def test_the_example_runs_with_demos_rendered_through_the_user_template(env: Path) -> None:
    rows = [json.loads(line) for line in (EXAMPLE / "rows.jsonl").read_text().splitlines()]
    ideal = {f"Context: {r['context']}\nQuestion: {r['question']}": r["ideal"] for r in rows}
    task: list[ChatRequest] = []

    def answer(request: ChatRequest) -> str:
        task.append(request)
        with_demos = len(request.messages) > 2
        return ideal.get(request.user, "?") if with_demos or "IBM" in request.user else "?"

    best = env / "best.json"
    with serve(responder=answer) as url:
        args = ["optimize", str(EXAMPLE / "rows.jsonl"), str(EXAMPLE / "prompt.json")]
        args += ["-m", "openai/task", "--api-base", url, "-s", "fewshot", "--max-iterations", "2"]
        args += ["--allow-degenerate-seed", "-o", str(best), "--run-dir", str(env / "runs")]
        result = CliRunner().invoke(build_cli(), args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    demo_requests = [r for r in task if len(r.messages) > 2]
    assert demo_requests  # fewshot sent demos as chat turns
    for request in task:
        users = [str(m["content"]) for m in request.messages if m["role"] == "user"]
        assert all(u.startswith("Context: ") and "{{" not in u for u in users), users
    saved = json.loads(best.read_text(encoding="utf-8"))
    assert saved[-1] == {"role": "user", "content": "Context: {{context}}\nQuestion: {{question}}"}


def test_a_frozen_message_is_kept_and_bad_names_are_refused(rows_file: Path, env: Path) -> None:
    edited = prompt_spec([TEMPLATE[0], {"role": "user", "content": "W: {{word}} H: {{hint}}"}])
    script = Script([edited.render()])
    with serve(responder=script) as url:
        optimizer = _reflective(rows_file, url, env).set_max_iterations(1)
        with pytest.raises(ConfigurationError, match=r"--var bogus=\.\.\.: the template has no"):
            optimizer.clone().set_variables(bogus="word").run(TEMPLATE)
        with pytest.raises(ConfigurationError, match="--rewrite-messages nope: not a message"):
            optimizer.clone().set_rewrite_messages("nope").run(TEMPLATE)
        assert script.task == []
        result = optimizer.set_rewrite_messages("system").run(TEMPLATE)
    assert any("rewrites the user message" in (r.rejected or "") for r in result.iterations)
    assert all(not r.user.startswith("W: ") for r in script.task)


def test_an_in_memory_dataset_binds_from_its_fields(rows_file: Path) -> None:
    from reflex.data.dataset import bind_dataset

    plain = load_dataset([{"id": "a", "input": "x", "word": "great", "hint": 3, "ideal": "p"}])
    bound = bind_dataset(plain, {"word": "word", "hint": "hint"})
    assert bound[0].variables == {"word": "great", "hint": "3"}
    fields = {"word": "word", "hint": "hint"}
    again = bind_dataset(load_dataset(rows_file, variables=fields), fields)  # already bound
    assert again[0].variables == {"word": "great", "hint": "none"}
    with pytest.raises(DatasetError, match="row 'a' has no field 'clue'"):
        bind_dataset(plain, {"hint": "clue"})
