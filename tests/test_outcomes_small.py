"""The smaller items of issue 18 (item 8): a leakage rejection is never built on, the
degenerate-seed refusal speaks Python too, the README's metric and guard examples work, the
judge's endpoint from the command line (one name for an endpoint: tests/test_run_models.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import BETTER, make_rows, responder, task_answer

from reflex import DegenerateSeedError, PromptOptimizer
from reflex.checks.isolation import prompt_id_of
from reflex.cli import build_cli
from reflex.testing import FakeModel, FakeRequest

START = "Classify the sentiment."
# Every row's input: a prompt that copies the held-out rows verbatim.
LEAK = START + " Known answers: " + " | ".join(r["input"] for r in make_rows())


def test_iterative_never_continues_from_a_rejected_leaking_prompt(tmp_path: Path) -> None:
    def leaky(request: FakeRequest) -> str:
        if request.model.startswith("fake/reasoner"):
            return f"<prompt>{LEAK}</prompt>"
        if "Known answers" in request.system:  # the leaking prompt does better on train
            return task_answer(FakeRequest(request.model, BETTER, request.user, ()))
        return responder(request)

    FakeModel(leaky).install()
    result = (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_strict_leakage()
        .set_run_dir(tmp_path)
        .configure(max_iterations=3, early_stopping_patience=None, leakage_min_words=3)
        .run(START)
    )
    first = result.iterations[0]
    assert first.accepted is False and first.rejected and first.change and first.change > 0
    assert result.best_prompt == START
    # Iterations 2 and 3 start from the current prompt: the start, never the rejected text.
    path = Path(str(result.run_dir)) / "evaluations.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    later = {r["prompt_id"] for r in rows if r["label"] in ("train:it2", "train:it3")}
    assert later == {prompt_id_of(START)}


def test_degenerate_seed_refusal_names_the_python_setter(tmp_path: Path) -> None:
    FakeModel(lambda request: "no idea").install()
    opt = (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path)
    )
    with pytest.raises(DegenerateSeedError) as info:
        opt.run(START)
    message = str(info.value)
    assert ".set_allow_degenerate_seed()" in message and "and 7 more like them" in message
    result = opt.set_allow_degenerate_seed().configure(max_iterations=1).run(START)
    assert result.final is not None


def test_readme_metric_and_guard_examples_work(
    tmp_path: Path, dataset_file: Path, prompt_file: Path
) -> None:
    FakeModel(responder).install()
    args = ["optimize", str(dataset_file), str(prompt_file), "-m", "fake/task"]
    args += ["--reasoning-model", "fake/reasoner", "--max-iterations", "2"]
    args += ["--metric", "exact_match", "--metric", "length:0,max_words=50"]
    args += ["--guard", "length:0.05", "--run-dir", str(tmp_path / "r")]
    args += ["--results-json", str(tmp_path / "r.json")]
    out = CliRunner().invoke(build_cli(), args, catch_exceptions=False)
    assert out.exit_code == 0, out.output
    data = json.loads((tmp_path / "r.json").read_text())
    assert set(data["final"]["scores_by_metric"]) == {"exact_match", "length"}


def test_judge_endpoint_from_the_command_line(tmp_path: Path, dataset_file: Path) -> None:
    from test_args import parse

    from reflex.cli.build import build_optimizer

    prompt = tmp_path / "p.md"
    prompt.write_text(START + "\n", encoding="utf-8")
    url = "http://user:s3cret-pass@127.0.0.1:9/v1"
    base = (str(dataset_file), str(prompt), "-m", "fake/task", "--judge", "fake/judge")
    assert parse(list(base)).judge_api_base is None  # click consumes the list it parses
    args = parse([*base, "--judge-api-base", url])
    opt = build_optimizer(args)
    [spec] = [s for s in opt._config.metric_specs if s.name == "llm_judge"]
    assert spec.options["api_base"] == "http://***@127.0.0.1:9/v1"  # set, and redacted
