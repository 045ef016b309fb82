"""Honest end states (issue 18, items 1 and 2): a run in which no candidate could be proposed is
not a success, a budget that stopped the loop is not ``completed``, and the CLI's exit code, the
summary, the HTML report, the result's ``repr`` and the trackers all say so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from conftest import make_rows, responder

from reflex import OptimizationResult, PromptOptimizer
from reflex.cli import build_cli
from reflex.cli.report_html import render_report
from reflex.result import RunEnd, StopReason
from reflex.run.resume import list_runs
from reflex.testing import FakeModel, FakeRequest, RecordingCallback

START = "Classify the sentiment."


def unusable(request: FakeRequest) -> str:
    """A reasoning model whose answers can never be used (no <prompt> tag)."""
    if request.model.startswith("fake/reasoner"):
        return "I cannot help with that."
    return responder(request)


def builder(run_dir: Path) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(run_dir)
        .configure(max_iterations=3)
    )


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(build_cli(), args, catch_exceptions=False)


def cli_args(dataset_file: Path, prompt_file: Path, run_dir: Path, *extra: str) -> list[str]:
    return [
        "optimize",
        str(dataset_file),
        str(prompt_file),
        "-m",
        "fake/task",
        "--reasoning-model",
        "fake/reasoner",
        "--max-iterations",
        "3",
        "--run-dir",
        str(run_dir),
        *extra,
    ]


# --- item 1: every iteration failed -----------------------------------------------------------


def test_every_iteration_failed_is_no_candidate_not_success(tmp_path: Path) -> None:
    FakeModel(unusable).install()
    recorder = RecordingCallback()
    result = builder(tmp_path).run(START, callbacks=[recorder])
    assert [bool(r.failed) for r in result.iterations] == [True, True, True]
    assert result.end_state is RunEnd.NO_CANDIDATE and not result.completed
    assert result.final is not None  # the final test score is still measured (initial prompt)
    first = result.warnings[0]
    assert first["kind"] == "no_candidate"
    assert "all 3 iteration(s) failed" in first["message"]
    assert "no revised prompt found x3" in first["message"]  # the reason, counted by kind
    assert "no_candidate" in repr(result) and "no revised prompt found x3" in repr(result)
    # The trackers get the same result (on_run_end) and the record says the same.
    assert recorder.hooks[-1] == "on_run_end"
    saved = json.loads((Path(str(result.run_dir)) / "result.json").read_text())
    assert saved["end_state"] == "no_candidate" and saved["completed"] is False
    assert [r.status for r in list_runs(tmp_path)] == ["no_candidate"]
    page = render_report(saved)
    assert '<p class="end bad">FAILED: no usable candidate: all 3 iteration(s) failed' in page
    assert "Warnings</h2><p>none" not in page


def test_cli_says_no_usable_candidate_first_in_red_and_exits_4(
    dataset_file: Path, prompt_file: Path, tmp_path: Path
) -> None:
    FakeModel(unusable).install()
    saved = tmp_path / "r.json"
    out = invoke(cli_args(dataset_file, prompt_file, tmp_path / "r", "--results-json", str(saved)))
    assert out.exit_code == 4, out.output
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    assert lines[0].startswith("FAILED: no usable candidate: all 3 iteration(s) failed")
    assert "no revised prompt found x3" in lines[0]
    assert json.loads(saved.read_text())["end_state"] == "no_candidate"


def test_some_failed_iterations_are_a_warning(tmp_path: Path) -> None:
    answers = iter(["I cannot help with that."] * 2)

    def once_bad(request: FakeRequest) -> str:
        if request.model.startswith("fake/reasoner"):
            return next(answers, None) or responder(request)
        return responder(request)

    FakeModel(once_bad).install()
    result = builder(tmp_path).run(START)
    assert result.end_state is RunEnd.SUCCEEDED and result.completed
    assert result.warnings[0]["kind"] == "failed_iterations"
    message = result.warnings[0]["message"]
    assert message.startswith("1 of 3 iterations failed (no revised prompt found x1)")


# --- item 2: a budget that stopped the loop ---------------------------------------------------


def test_budget_that_stopped_the_loop_is_paused_not_completed(tmp_path: Path) -> None:
    FakeModel(responder).install()
    recorder = RecordingCallback()
    # preflight 10 + baseline 6 + val 6 + reserve 6 for the final; 30 leaves 2 for iterations.
    result = builder(tmp_path).set_budget(max_calls=30).run(START, callbacks=[recorder])
    assert result.stop is StopReason.BUDGET and result.final is not None
    assert result.end_state is RunEnd.PAUSED_BUDGET and result.completed is False
    assert [r.status for r in list_runs(tmp_path)] == ["paused"]
    ended = recorder.calls[-1][1][0]
    assert isinstance(ended, OptimizationResult) and ended.end_state is RunEnd.PAUSED_BUDGET


def test_paused_run_resumes_with_a_larger_budget(tmp_path: Path) -> None:
    fake = FakeModel(responder).install()
    paused = builder(tmp_path).set_budget(max_calls=30).run(START)
    assert paused.end_state is RunEnd.PAUSED_BUDGET
    paid = len(fake.requests)
    resumed = builder(tmp_path).configure(max_iterations=3).run(START, resume=True)
    assert resumed.run_id == paused.run_id and resumed.end_state is RunEnd.SUCCEEDED
    assert len(resumed.iterations) > len(paused.iterations)
    assert len(fake.requests) > paid  # it went on past where the budget paused it


def test_cli_exit_code_3_when_paused_on_a_budget_with_the_final_written(
    dataset_file: Path, prompt_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    FakeModel(responder).install()
    args = cli_args(dataset_file, prompt_file, tmp_path / "r", "--max-calls", "30")
    out = invoke([*args, "-o", "best.md", "--results-json", "r.json"])
    assert out.exit_code == 3, out.output
    assert out.stdout.lstrip().startswith("paused on a budget")
    data = json.loads(Path("r.json").read_text())
    assert data["end_state"] == "paused_budget" and data["final"] is not None
    assert Path("best.md").read_text().strip() == data["best_prompt"]


def test_cli_exit_code_0_when_succeeded(
    dataset_file: Path, prompt_file: Path, tmp_path: Path
) -> None:
    FakeModel(responder).install()
    out = invoke(cli_args(dataset_file, prompt_file, tmp_path / "r"))
    assert out.exit_code == 0, out.output
    assert out.stdout.lstrip().startswith("succeeded")


def test_old_records_still_read() -> None:
    assert RunEnd("completed") is RunEnd.SUCCEEDED is RunEnd.COMPLETED
    assert RunEnd.of_record({"completed": True}) is RunEnd.SUCCEEDED
    assert RunEnd.of_record({"end_state": "completed"}) is RunEnd.SUCCEEDED


# --- item 5: warnings are shown; logging goes through rich's console ------------------------


def test_summary_table_shows_every_warning(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from reflex.cli.console import print_summary

    FakeModel(unusable).install()
    result = builder(tmp_path).run(START)
    out = io.StringIO()
    print_summary(result, Console(file=out, width=400))
    text = out.getvalue()
    assert text.startswith("FAILED: no usable candidate")
    for warning in result.warnings:
        assert f"{warning['kind']}: {warning['message']}" in text


def test_log_records_go_through_the_console_of_the_progress_bar() -> None:
    import io
    import logging

    from rich.console import Console

    from reflex.cli.console import ConsoleReporter, log_to_console

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    reporter = ConsoleReporter(console)
    root = logging.getLogger()
    before = root.handlers[:]
    with log_to_console(console):
        reporter.on_evaluation_start("test:baseline", 10)
        logging.getLogger("reflex.test").warning("a warning during the bar")
        reporter.close()
    assert root.handlers == before  # restored: nothing of this command outlives it
    # Rich printed it (above the live bar): it is in the console's stream, on its own line.
    lines = [line for line in out.getvalue().splitlines() if "a warning during the bar" in line]
    assert lines and all("test:baseline" not in line for line in lines)


def test_overfit_gap_is_configurable() -> None:
    from reflex.checks.audit import annotate
    from reflex.result import EvalSnapshot

    def result() -> OptimizationResult:
        snap = EvalSnapshot(START, "test", 0.7, {})
        return OptimizationResult(
            START,
            0.9,
            snap,
            snap,
            split_sizes={"train": 6, "val": 2, "test": 2},
            best_score_val=0.9,  # the overfit gap is val vs test (best_score is train's best)
        )

    default, loose = result(), result()
    annotate(default, None)
    annotate(loose, None, overfit_gap=0.3)
    assert [w["kind"] for w in default.warnings] == ["overfit"]
    assert "above 0.10" in default.warnings[0]["message"] and loose.warnings == []
    from reflex.config import BaseRunConfig

    assert BaseRunConfig(overfit_gap=0.3).overfit_gap == 0.3
