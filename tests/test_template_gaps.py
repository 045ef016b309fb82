"""Small gaps around chat templates: a bound dataset round-trips through ``to_records``,
``prompt_mode='prepend'`` is refused for a template (one line, before any call), and
``judge-check`` binds a template's rows as ``optimize`` does (``--prompt``, ``--var``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_judge import judge_reply

from reflex import ConfigurationError, PromptOptimizer
from reflex.cli import build_cli
from reflex.data.dataset import bind_dataset, load_dataset
from reflex.errors import DatasetError
from reflex.testing import FakeModel
from reflex.testing.fakes import FakeRequest

TEMPLATE = [
    {"role": "system", "content": "Answer the question about the text."},
    {"role": "user", "content": "Context: {{context}}\nQuestion: {{question}}"},
]
FIELDS = {"context": "context", "question": "q"}


def rows(n: int = 6) -> list[dict[str, object]]:
    return [
        {"id": f"r{i}", "context": f"text {i}", "q": f"question {i}", "ideal": "positive"}
        | ({"topic": "t", "split": "test"} if i == 0 else {})
        for i in range(n)
    ]


def test_a_bound_dataset_round_trips_through_to_records() -> None:
    bound = load_dataset(rows(), variables=FIELDS)
    records = bound.to_records()
    assert records[0]["variables"] == {"context": "text 0", "question": "question 0"}
    assert records[0]["metadata"] == {"topic": "t"}
    again = load_dataset(records)  # no mapping needed: the values travel by name
    assert list(again) == list(bound)
    assert again.fingerprint() == bound.fingerprint()
    assert list(load_dataset(records, variables=FIELDS)) == list(bound)  # the run's mapping too
    assert list(bind_dataset(again, FIELDS)) == list(bound)
    records[1]["variables"] = "context"
    with pytest.raises(DatasetError, match="field 'variables' must be an object"):
        load_dataset(records)


def test_prepend_is_refused_for_a_chat_template_before_any_call(tmp_path: Path) -> None:
    fake = FakeModel(lambda request: "positive").install()
    builder = (
        PromptOptimizer()
        .set_dataset([dict(r, input=f"question {i}") for i, r in enumerate(rows(12))])
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_run_dir(tmp_path)
        .set_variables(question="q")
        .configure(prompt_mode="prepend", max_iterations=1)
    )
    with pytest.raises(ConfigurationError, match="prompt_mode='prepend' does not apply to a chat"):
        builder.run(TEMPLATE)
    assert fake.requests == []
    plain = builder.clone().set_strategy("instructions").configure(prompt_mode="prepend")
    assert plain.run("Answer the question.").final is not None  # a system prompt still may


def test_judge_check_binds_a_templates_rows(tmp_path: Path) -> None:
    judged: list[FakeRequest] = []

    def judge(request: FakeRequest) -> str:
        judged.append(request)
        return judge_reply(request)

    FakeModel(judge).install()
    labelled = [dict(r, output="positive", verdict="pass") for r in rows()]
    data = tmp_path / "labelled.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in labelled), encoding="utf-8")
    prompt = tmp_path / "template.json"
    prompt.write_text(json.dumps(TEMPLATE), encoding="utf-8")
    base = ["judge-check", str(data), "--judge", "fake/judge", "--label-field", "verdict"]
    base += ["--run-dir", str(tmp_path / "rd")]
    refused = CliRunner().invoke(build_cli(), base)
    assert refused.exit_code == 2 and "pass --prompt FILE" in refused.output, refused.output
    assert f"{data}:1: no input" in refused.output
    assert judged == []
    args = [*base, "--prompt", str(prompt), "--var", "question=q", "--json"]
    result = CliRunner().invoke(build_cli(), args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["n"] == 6 and report["tpr"] == 1.0
    # The judge saw each row's input as its variables, the way optimize's judge does.
    shown = [str(r.messages[-1]["content"]) for r in judged]
    assert all(re.search(r'"context": "text \d", "question": "question \d"', s) for s in shown)
