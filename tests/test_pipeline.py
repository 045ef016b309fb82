"""Pipeline mode on the fake model: traces, trace scoring, failures, timeouts, inputs, CLI."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import BETTER, make_rows, task_answer
from test_resume import cached_rows, comparable, reasoner_variants

from reflex import ConfigurationError, DatasetError, PromptOptimizer
from reflex.cli import build_cli
from reflex.data.pipeline import (
    Prompt,
    load_inputs,
    load_pipeline,
    pipeline_from_function,
)
from reflex.data.prompts import PromptSpec
from reflex.models.client import ClientSettings, ModelSpec, ProviderClient, load_litellm
from reflex.models.runner import LoopRunner
from reflex.result import EvalSnapshot
from reflex.run.evaluate import Evaluator
from reflex.run.pipeline_runner import PipelineRunner
from reflex.testing import FakeModel, FakeRequest
from reflex.types import Example, Score

START = "Classify the sentiment."
TASK = ModelSpec("fake/task")


def pipeline_responder(request: FakeRequest) -> str:
    if request.model == "fake/polisher":  # the second step: lower-cases the first step's text
        return request.user.strip().lower()
    if request.model.startswith("fake/reasoner"):
        return (
            f"<diagnosis>too chatty</diagnosis>\n<edit>one word</edit>\n<prompt>{BETTER}</prompt>"
        )
    return task_answer(request)


@pytest.fixture
def fake() -> FakeModel:
    return FakeModel(pipeline_responder).install()


def two_step(prompt: Prompt, input: str, call: Callable[..., str]) -> str:
    label = call(
        [{"role": "system", "content": prompt}, {"role": "user", "content": input}], step="classify"
    )
    return call(label, model="fake/polisher", step="polish")


class StepCount:
    """Scores the trace: 1 when it has exactly two steps (checks what a trace metric receives)."""

    name = "two_steps"
    requires_reference = False
    scores_trace = True

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def score(self, output: str, example: Example) -> Score:
        trace = json.loads(output)
        self.seen.append(trace)
        return Score(1.0 if len(trace["steps"]) == 2 else 0.0)


class Exact:
    name = "exact"
    requires_reference = True

    def score(self, output: str, example: Example) -> Score:
        return Score(1.0 if output == example.ideal else 0.0)


def evaluate(
    fn: Callable[..., Any],
    rows: list[Example],
    *,
    prompt: str = BETTER,
    timeout: float = 5.0,
    metrics: list[Any] | None = None,
    spec: PromptSpec | None = None,
    trace_metrics: tuple[str, ...] = (),
) -> EvalSnapshot:
    client = ProviderClient(ClientSettings(max_workers=4))
    runner = PipelineRunner(
        pipeline_from_function(fn), client, timeout=timeout, spec=spec, trace_metrics=trace_metrics
    )
    evaluator = Evaluator(client, [TASK], metrics or [Exact()], {}, pipeline=runner)
    return LoopRunner.shared().run(evaluator.evaluate(prompt, rows, "test"))


def examples(n: int = 4) -> list[Example]:
    return list(load_inputs(make_rows(n)))


# --- the run: a two-step pipeline, traced, counted -----------------------------------------------


def test_two_step_pipeline_optimizes_and_records_traces(fake: FakeModel, tmp_path: Path) -> None:
    result = (
        PromptOptimizer()
        .set_inputs(make_rows(20))
        .set_pipeline(two_step, timeout=10)
        .add_provider("fake/task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .configure(max_iterations=2, run_dir=str(tmp_path))
        .set_accept("any")  # 4 val rows: the pipeline is under test, the gate in test_acceptance
        .run(START)
    )
    assert result.completed and result.baseline is not None and result.final is not None
    assert result.final.mean_score == 1.0 > result.baseline.mean_score
    sample = result.final.samples[0]
    assert [step["name"] for step in sample.trace or []] == ["classify", "polish"]
    assert sample.trace is not None and sample.trace[1]["output"] == sample.output
    # Both steps are task calls through the run's client: counted and cached like any other.
    assert {r.model for r in fake.requests} == {"fake/task", "fake/polisher", "fake/reasoner"}
    assert result.usage["task"]["calls"] == sum(
        1 for r in fake.requests if r.model != "fake/reasoner"
    )
    saved = json.loads((Path(str(result.run_dir)) / "result.json").read_text())
    assert saved["final"]["samples"][0]["trace"][0]["name"] == "classify"
    config = json.loads((Path(str(result.run_dir)) / "config.json").read_text())
    assert config["pipeline"].endswith("two_step") and config["pipeline_timeout"] == 10


# --- failures ---------------------------------------------------------------------------------


# --- components -------------------------------------------------------------------------------


# --- inputs and loading -----------------------------------------------------------------------


def test_inputs_file_json_array_and_jsonl(tmp_path: Path) -> None:
    array = tmp_path / "inputs.json"
    array.write_text(json.dumps(["first", {"input": {"q": 1}, "ideal": "y", "id": "k"}]))
    lines = tmp_path / "inputs.jsonl"
    lines.write_text('"first"\n\n{"input": "second", "tag": "t"}\n')
    a, b = load_inputs(array), load_inputs(lines)
    assert [e.input for e in a] == ["first", '{"q": 1}'] and a[1].ideal == "y" and a[1].id == "k"
    assert [e.input for e in b] == ["first", "second"] and b[1].metadata == {"tag": "t"}
    assert a.source == str(array) and a.name == "inputs"


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ('"a"\n{"input": \n', "bad.jsonl:2", "invalid JSON"),
        ('[1, "a"]', "bad.jsonl:1", "an object with an 'input' field"),
        ("[\n", "bad.jsonl:2", "invalid JSON array"),
        ("", "bad.jsonl:1", "no inputs"),
    ],
)
def test_bad_inputs_files_name_file_and_line(
    tmp_path: Path, text: str, where: str, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(DatasetError) as info:
        load_inputs(path)
    assert where in str(info.value) and message in str(info.value)


def test_load_pipeline_by_path_and_name(tmp_path: Path) -> None:
    path = tmp_path / "pipe.py"
    path.write_text(
        "def run(prompt, input, call):\n    return input\n\ndef other(p, i):\n    return p\n"
    )
    assert load_pipeline(path).name == f"{path}:run" and load_pipeline(path).takes_call
    named = load_pipeline(f"{path}:other")
    assert named.name == f"{path}:other" and not named.takes_call and named.sha256


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (None, "pipeline file not found"),
        ("x = 1\n", "no `run` or `pipeline` function"),
        ("raise RuntimeError('boom')\n", "importing the pipeline file failed: RuntimeError: boom"),
        ("def run(prompt):\n    return prompt\n", "takes 1 argument(s)"),
    ],
)
def test_load_pipeline_errors_name_the_file(
    tmp_path: Path, source: str | None, message: str
) -> None:
    path = tmp_path / "pipe.py"
    if source is not None:
        path.write_text(source)
    with pytest.raises(ConfigurationError) as info:
        load_pipeline(path)
    assert str(path) in str(info.value) and message in str(info.value)


# --- the CLI ----------------------------------------------------------------------------------


PIPELINE_FILE = """
def run(prompt, input, call):
    label = call([{"role": "system", "content": prompt}, {"role": "user", "content": input}],
                 step="classify")
    return call(label, model="fake/polisher", step="polish")
"""


def test_cli_pipeline_run(fake: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pipeline.py").write_text(PIPELINE_FILE)
    (tmp_path / "inputs.json").write_text(json.dumps(make_rows(20)))
    (tmp_path / "prompt.md").write_text(START + "\n")
    args = ["optimize", "--inputs-file", "inputs.json", "prompt.md", "--pipeline-file"]
    args += ["pipeline.py", "--pipeline-timeout", "30", "-m", "fake/task"]
    args += ["--reasoning-model", "fake/reasoner", "--max-iterations", "2", "--accept", "any"]
    result = CliRunner().invoke(build_cli(), [*args, "--results-json", "out.json"])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["final"]["mean_score"] == 1.0
    assert [s["name"] for s in data["final"]["samples"][0]["trace"]] == ["classify", "polish"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["data.jsonl", "prompt.md", "--inputs-file", "inputs.json"], "not both"),
        (["--inputs-file", "inputs.json"], "Missing argument 'PROMPT'"),
        (["data.jsonl", "prompt.md", "--score-trace", "exact_match"], "needs --pipeline-file"),
    ],
)
def test_cli_pipeline_usage_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "inputs.json").write_text(json.dumps(make_rows(5)))
    (tmp_path / "data.jsonl").write_text(json.dumps(make_rows(1)[0]) + "\n")
    (tmp_path / "prompt.md").write_text(START + "\n")
    result = CliRunner().invoke(build_cli(), ["optimize", *extra, "-m", "fake/task"])
    assert result.exit_code == 2 and message in result.output


# --- resume -----------------------------------------------------------------------------------


def resume_responder(request: FakeRequest) -> str:
    if request.model == "fake/polisher":
        return request.user.strip().lower()
    return reasoner_variants(request)


def resume_builder(run_dir: Path) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_inputs(make_rows(30))
        .set_pipeline(two_step)
        .add_provider("fake/task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(run_dir)
        .configure(max_iterations=3, early_stopping_patience=None, max_workers=4)
    )


def test_pipeline_run_resumes_after_sigkill(tmp_path: Path) -> None:
    reference = FakeModel(resume_responder).install()
    expected = resume_builder(tmp_path / "ref").run(START)
    total = len(reference.requests)
    load_litellm()  # import once in the parent; the child inherits it
    for kill_at in (total // 3, 2 * total // 3):
        run_dir = tmp_path / f"kill{kill_at}"
        pid = os.fork()
        if pid == 0:  # child: SIGKILL itself at call ``kill_at``

            def fault(request: FakeRequest, n: int, at: int = kill_at) -> BaseException | None:
                if n >= at:
                    os.kill(os.getpid(), signal.SIGKILL)
                return None

            FakeModel(resume_responder, fault=fault).install()
            try:
                resume_builder(run_dir).run(START)
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status)
        paid_before = cached_rows(run_dir)
        fake = FakeModel(resume_responder).install()
        resumed = resume_builder(run_dir).run(START, resume=True)
        assert comparable(resumed) == comparable(expected), f"kill at call {kill_at}"
        assert len(fake.requests) == total - paid_before


# --- the row itself, and chat templates ---------------------------------------------------------


def test_a_chat_template_reaches_the_pipeline_unrendered_with_the_row_variables(
    fake: FakeModel, tmp_path: Path
) -> None:
    template = [
        {"role": "system", "content": "Classify the sentiment."},
        {"role": "user", "content": "Review: {{text}}"},
    ]
    seen: list[tuple[str, str, dict[str, str]]] = []

    def run(prompt: Prompt, input: str, *, example: Example) -> str:
        seen.append((str(prompt), input, dict(example.variables)))
        return "positive"

    rows = [{"id": f"r{i}", "text": f"film {i}", "ideal": "positive"} for i in range(10)]
    result = (
        PromptOptimizer()
        .set_dataset(rows)
        .set_pipeline(run)
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_max_iterations(1)
        .set_run_dir(tmp_path)
        .run(template)
    )
    assert result.final is not None and result.final.mean_score == 1.0
    prompt, input, variables = seen[0]
    assert "{{text}}" in prompt and prompt.startswith('<message role="system">')
    assert json.loads(input) == variables and variables["text"].startswith("film ")
