"""The judge inside a run: counted, cached, concurrent, model-graded, label-free, slices, CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import BETTER, LABELS, make_rows, responder, until

from reflex import PromptOptimizer
from reflex.cli import build_cli
from reflex.judging.judge import LLMJudge
from reflex.testing import FakeModel, FakeRequest
from reflex.types import Example, JudgeCall, Score

START = "Classify the sentiment."


def judged_output(request: FakeRequest) -> str:
    first_user = next(m["content"] for m in request.messages if m["role"] == "user")
    found = re.search(r"## Response\n(.*?)\n\n## Criteria", first_user, re.DOTALL)
    assert found is not None, first_user
    return found.group(1)


def judge_reply(request: FakeRequest) -> str:
    """Grades 5 for a one-word label, 2 otherwise; garbles replies to outputs saying 'garble'."""
    output = judged_output(request)
    if "garble" in output:
        return "I cannot decide."
    grade = 5 if output.strip() in LABELS else 2
    first_user = next(m["content"] for m in request.messages if m["role"] == "user")
    names = re.findall(r"^- (\w+):", first_user.split("## Criteria")[1], re.MULTILINE)
    return json.dumps({"criteria": {n: {"grade": grade, "reason": "checked"} for n in names}})


def full_responder(request: FakeRequest) -> str:
    if request.model == "fake/judge":
        return judge_reply(request)
    return responder(request)


@pytest.fixture
def fake() -> FakeModel:
    return FakeModel(full_responder).install()


def judge() -> LLMJudge:
    return LLMJudge("fake/judge", criteria="Is the answer a single sentiment word?")


def builder(tmp_path: Path, rows: list[dict[str, Any]]) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(rows)
        .add_provider("fake", "task")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path)
    )


def label_free(n: int = 30) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k != "ideal"} for row in make_rows(n)]


def test_label_free_dataset_runs_on_the_judge_alone(fake: FakeModel, tmp_path: Path) -> None:
    result = builder(tmp_path, label_free()).add_metric(judge()).run(START)
    assert result.best_prompt == BETTER
    assert result.final is not None and result.final.mean_score == 1.0
    assert result.baseline is not None and result.baseline.mean_score < 1.0
    assert result.model_graded and result.final.model_graded
    assert result.to_dict()["model_graded"] is True
    assert result.usage["judge"]["calls"] > 0
    judge_calls = len(fake.calls_to("fake/judge"))
    assert result.usage["judge"]["calls"] == judge_calls
    assert result.usage["task"]["calls"] == len(fake.calls_to("fake/task"))


def test_reference_metrics_alone_are_not_model_graded(fake: FakeModel, tmp_path: Path) -> None:
    result = builder(tmp_path, make_rows()).add_metric("exact_match").run(START)
    assert result.model_graded is False and result.usage["judge"]["calls"] == 0


def test_judge_calls_are_cached_across_runs(fake: FakeModel, tmp_path: Path) -> None:
    builder(tmp_path, label_free()).add_metric(judge()).run(START)
    paid = len(fake.calls_to("fake/judge"))
    again = builder(tmp_path, label_free()).add_metric(judge()).run(START)
    assert len(fake.calls_to("fake/judge")) == paid
    assert again.usage["judge"]["calls"] == 0 and again.usage["judge"]["cache_hits"] > 0


def test_judge_with_reference_metric_and_per_metric_breakdown(
    fake: FakeModel, tmp_path: Path
) -> None:
    rows = make_rows()
    for row in rows[::2]:
        del row["ideal"]  # half the rows have no reference
    opt = (
        builder(tmp_path, rows)
        .add_metric("exact_match")
        .set_judge("fake/judge", criteria="Is it one word?", weight=2.0)
    )
    result = opt.run(START)
    assert result.baseline is not None
    assert set(result.baseline.scores_by_metric) == {"exact_match", "llm_judge"}
    skipped = result.baseline.n_skipped["exact_match"]
    assert skipped == sum(1 for s in result.baseline.samples if "exact_match" not in s.scores)
    assert skipped > 0 and "llm_judge" not in result.baseline.n_skipped
    assert result.iterations and "llm_judge" in result.iterations[0].scores_by_metric


def test_failed_judgements_are_excluded_and_counted(tmp_path: Path) -> None:
    def task(request: FakeRequest) -> str:
        index = int(request.user.split()[1].rstrip(":"))
        return "garble" if index % 5 == 0 else responder(request)

    def route(request: FakeRequest) -> str:
        if request.model == "fake/task":
            return task(request)
        return judge_reply(request) if request.model == "fake/judge" else responder(request)

    fake = FakeModel(route).install()
    result = builder(tmp_path, label_free()).add_metric(judge()).run(START)
    baseline = result.baseline
    assert baseline is not None
    garbled = [s for s in baseline.samples if s.output == "garble"]
    assert garbled and all(s.score is None and s.error for s in garbled)
    assert all("llm_judge" in s.failed_metrics for s in garbled)
    assert baseline.n_failed == {"llm_judge": len(garbled)}
    assert baseline.n_errors >= len(garbled)
    # each garbled row: first try + 2 repair turns, no midpoint anywhere
    scored = [s.scores["llm_judge"] for s in baseline.samples if "llm_judge" in s.scores]
    assert set(scored) <= {0.0, 0.25, 0.5, 0.75, 1.0} and 0.5 not in scored
    assert fake.calls_to("fake/judge")


class CountingJudge(LLMJudge):
    """Records how many judgements are in flight at once (the fake model itself is sync)."""

    def __init__(self) -> None:
        super().__init__("fake/judge", criteria="Is it one word?")
        self.active = self.peak = 0

    async def ascore(self, output: str, example: Example, call: JudgeCall) -> Score:
        self.active += 1
        self.peak = max(self.peak, self.active)
        # The first judgement waits for a second one to start (a sleep would race a slow
        # machine); if judgements ran one at a time, none would come and the guard would end it.
        await until(lambda: self.peak > 1, "a second judgement in flight")
        try:
            return await super().ascore(output, example, call)
        finally:
            self.active -= 1


def test_judgements_run_concurrently(fake: FakeModel, tmp_path: Path) -> None:
    counting = CountingJudge()
    builder(tmp_path, label_free(12)).add_metric(counting).configure(max_iterations=1).run(START)
    assert counting.peak > 1


def test_slices_report_baseline_and_final_per_group(fake: FakeModel, tmp_path: Path) -> None:
    rows = make_rows()
    for i, row in enumerate(rows):
        row["difficulty"] = "easy" if i % 3 == 0 else "hard"
    result = builder(tmp_path, rows).add_metric("exact_match").set_slices("difficulty").run(START)
    groups = result.slices["difficulty"]
    assert set(groups) <= {"easy", "hard"}
    assert sum(g["n"] for g in groups.values()) == len(result.baseline.samples)  # type: ignore[union-attr]
    if "easy" in groups:
        assert groups["easy"]["baseline"] == 1.0  # the seed prompt already gets every third row
    assert groups["hard"]["baseline"] == 0.0 and groups["hard"]["final"] == 1.0
    assert groups["hard"]["change"] == 1.0
    assert result.to_dict()["slices"] == result.slices


def test_cli_judge_and_slice_options(fake: FakeModel, tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    rows = label_free()
    for i, row in enumerate(rows):
        row["lang"] = "en" if i % 2 else "de"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    prompt = tmp_path / "prompt.md"
    prompt.write_text(START + "\n", encoding="utf-8")
    rubric = tmp_path / "rubric.md"
    rubric.write_text("Is the answer a single sentiment word?\n", encoding="utf-8")
    out = tmp_path / "result.json"
    result = CliRunner().invoke(
        build_cli(),
        [
            "optimize",
            str(data),
            str(prompt),
            "-m",
            "fake/task",
            "--reasoning-model",
            "fake/reasoner",
            "--judge",
            "fake/judge",
            "--judge-criteria",
            str(rubric),
            "--slice-by",
            "lang",
            "--run-dir",
            str(tmp_path / "runs"),
            "--results-json",
            str(out),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    saved = json.loads(out.read_text())
    assert saved["model_graded"] is True
    assert set(saved["final"]["scores_by_metric"]) == {"llm_judge"}
    assert set(saved["slices"]["lang"]) <= {"en", "de"}
    assert "test score by lang" in result.output


def test_cli_judge_criteria_needs_judge(
    fake: FakeModel, tmp_path: Path, dataset_file: Path, prompt_file: Path
) -> None:
    result = CliRunner().invoke(
        build_cli(),
        [
            "optimize",
            str(dataset_file),
            str(prompt_file),
            "-m",
            "fake/task",
            "--judge-criteria",
            str(prompt_file),
        ],
    )
    assert result.exit_code != 0 and "--judge" in result.output


def test_no_row_judged_under_both_prompts_is_a_warning_not_a_traceback(tmp_path: Path) -> None:
    """Every judgement fails to parse: no paired test exists, the run says so and ends."""

    def route(request: FakeRequest) -> str:
        if request.model == "fake/task":
            return "garble"
        return judge_reply(request) if request.model == "fake/judge" else responder(request)

    FakeModel(route).install()
    opt = builder(tmp_path, label_free()).add_metric(judge()).set_allow_degenerate_seed()
    result = opt.run(START)
    assert result.baseline is not None and result.final is not None
    assert not result.baseline.per_example() and not result.final.per_example()
    assert result.p_value is None and result.significance is None
    kinds = {w["kind"]: w["message"] for w in result.warnings}
    assert "no test row was scored under both prompts" in kinds["no_paired_test"]
    saved = json.loads((Path(result.run_dir) / "result.json").read_text(encoding="utf-8"))
    assert saved["p_value"] is None
    assert any(w["kind"] == "no_paired_test" for w in saved["warnings"])
