"""config.json's ``metric_specs``: ``check`` and ``export`` rebuild a run's llm_judge from it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from conftest import BETTER, LABELS, make_rows, responder

from reflex import ConfigurationError, PromptOptimizer
from reflex.cli import build_cli
from reflex.config import RunConfig, metric_specs
from reflex.judging.judge import LLMJudge
from reflex.run.gate import rebuild_metrics
from reflex.testing import FakeModel, FakeRequest

START = "Classify the sentiment."
RUBRIC = [
    {"name": "label", "description": "Is it exactly one sentiment word?", "weight": 3.0},
    {"name": "tone", "description": "Is it polite?", "gate": 2},
]


def judge_reply(request: FakeRequest) -> str:
    """Grade 5 for a one-word label, 2 otherwise, on every criterion the rubric names."""
    first_user = next(m["content"] for m in request.messages if m["role"] == "user")
    found = re.search(r"## Response\n(.*?)\n\n## Criteria", first_user, re.DOTALL)
    assert found is not None, first_user
    grade = 5 if found.group(1).strip() in LABELS else 2
    names = re.findall(r"^- (\w+):", first_user.split("## Criteria")[1], re.MULTILINE)
    return json.dumps({"criteria": {n: {"grade": grade, "reason": "ok"} for n in names}})


@pytest.fixture
def fake_responder() -> Any:
    return lambda r: judge_reply(r) if r.model == "fake/judge" else responder(r)


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in make_rows(30)), encoding="utf-8")
    return path


def judged_run(data: Path, run_dir: Path, **judge: Any) -> PromptOptimizer:
    options = {"criteria_list": RUBRIC, "instructions": "Be strict.", **judge}
    return (
        PromptOptimizer()
        .set_dataset(data)
        .add_provider("fake", "task")
        .add_metric("exact_match", weight=0.0)
        .set_judge("fake/judge", **options)
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(run_dir)
    )


@pytest.fixture
def run(fake_model: FakeModel, data_file: Path, tmp_path: Path) -> Path:
    result = judged_run(data_file, tmp_path / "rd").run(START)
    assert result.best_prompt == BETTER and result.usage["judge"]["calls"] > 0
    return Path(str(result.run_dir))


def cli(command: str, args: list[str]) -> Result:
    return CliRunner().invoke(build_cli(), [command, *args], catch_exceptions=False)


def forget_specs(run: Path) -> None:
    """Make ``run`` look like a record written before config.json had metric_specs."""
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    del config["metric_specs"]
    (run / "config.json").write_text(json.dumps(config), encoding="utf-8")


def test_config_json_records_the_judge_without_secrets(fake_model: FakeModel, run: Path) -> None:
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    [spec] = config["metric_specs"]  # exact_match has no options: rebuilt by name
    assert spec["name"] == "llm_judge"
    options = spec["options"]
    assert options["model"] == "fake/judge" and options["instructions"] == "Be strict."
    assert [c["name"] for c in options["criteria_list"]] == ["label", "tone"]
    assert options["criteria_list"][0]["weight"] == 3.0 and options["criteria_list"][1]["gate"] == 2
    rebuilt = rebuild_metrics(RunConfig.model_validate(config))
    assert [m.name for m in rebuilt] == ["exact_match", "llm_judge"]
    judge = rebuilt[1]
    assert isinstance(judge, LLMJudge) and judge.rubric.instructions == "Be strict."
    assert judge.to_config() == spec


def test_judge_api_base_credentials_are_redacted() -> None:
    judge = LLMJudge("openai/gpt-4o-mini", api_base="https://user:s3cret@judge.example/v1")
    [spec] = metric_specs([judge])
    assert "s3cret" not in json.dumps(spec.model_dump(mode="json"))


def test_check_against_a_judged_record_reuses_its_judgements(
    fake_model: FakeModel, run: Path, data_file: Path, tmp_path: Path
) -> None:
    prompt = tmp_path / "p.md"
    prompt.write_text(BETTER, encoding="utf-8")
    judge_calls = len(fake_model.calls_to("fake/judge"))
    cache = run.parent.parent / "cache.sqlite"
    args = ["--prompt", str(prompt), "--dataset", str(data_file), "--baseline", str(run)]
    res = cli("check", [*args, "--cache", str(cache), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["scores_by_metric"]["llm_judge"] == 1.0 and not data["regressed"]
    # The rebuilt judge asks exactly what the run's judge asked: every judgement is cached.
    assert len(fake_model.calls_to("fake/judge")) == judge_calls
    # Without the cache the judge is asked again: the record's rubric, gate and instructions.
    prompt.write_text(START, encoding="utf-8")
    worse = cli("check", [*args, "--json"])
    assert worse.exit_code == 1 and json.loads(worse.output)["scores_by_metric"]["llm_judge"] < 1
    asked = fake_model.calls_to("fake/judge")[judge_calls:]
    assert len(asked) == json.loads(worse.output)["rows"]
    assert all("- tone: Is it polite? (must be at least 2)" in r.user for r in asked)
    assert all(r.user.endswith("## Instructions\nBe strict.") for r in asked)


def test_export_of_a_judged_run_uses_the_rebuilt_judge(
    fake_model: FakeModel, run: Path, tmp_path: Path
) -> None:
    judge_calls = len(fake_model.calls_to("fake/judge"))
    out = tmp_path / "train.jsonl"
    res = cli("export", [str(run), "--training-jsonl", str(out), "--allow-calls"])
    assert res.exit_code == 0, res.output
    rows = out.read_text(encoding="utf-8").splitlines()
    assert rows and json.loads(rows[0])["messages"][0]["content"] == BETTER
    # The rebuilt judge asks what the run's judge asked: the rollouts the run already judged
    # come from the cache; only the rollouts paid for now are judged, with the run's rubric.
    paid = re.search(r"(\d+) paid calls", res.output)
    asked = fake_model.calls_to("fake/judge")[judge_calls:]
    assert len(asked) == (int(paid.group(1)) if paid else 0), res.output
    assert all(r.user.endswith("## Instructions\nBe strict.") for r in asked)


def test_old_record_without_specs_needs_judge_and_says_so(
    fake_model: FakeModel, run: Path, data_file: Path, tmp_path: Path
) -> None:
    forget_specs(run)
    prompt = tmp_path / "p.md"
    prompt.write_text(BETTER, encoding="utf-8")
    args = ["--prompt", str(prompt), "--dataset", str(data_file), "--baseline", str(run)]
    res = cli("check", args)
    assert res.exit_code == 2
    assert "metric 'llm_judge' without its options" in res.output and "--judge" in res.output
    out = tmp_path / "t.jsonl"
    exported = cli("export", [str(run), "--training-jsonl", str(out)])
    assert exported.exit_code == 2 and "pass --judge PROVIDER/MODEL" in exported.output
    # Supplying the judge by hand works (its rubric differs, so these judgements are new).
    rubric = tmp_path / "rubric.json"
    rubric.write_text(json.dumps({"criteria": RUBRIC, "instructions": "Be strict."}), "utf-8")
    ok = cli("check", [*args, "--judge", "fake/judge", "--judge-criteria", str(rubric)])
    assert ok.exit_code == 0, ok.output


def test_judge_flag_is_refused_when_the_record_has_its_own(
    fake_model: FakeModel, run: Path, data_file: Path, tmp_path: Path
) -> None:
    prompt = tmp_path / "p.md"
    prompt.write_text(BETTER, encoding="utf-8")
    args = ["--prompt", str(prompt), "--dataset", str(data_file), "--baseline", str(run)]
    res = cli("check", [*args, "--judge", "fake/other"])
    assert res.exit_code == 2 and "records its own llm_judge" in res.output


def test_old_record_with_option_less_metrics_still_works(
    fake_model: FakeModel, data_file: Path, tmp_path: Path
) -> None:
    result = (
        PromptOptimizer()
        .set_dataset(data_file)
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path / "rd")
        .run(START)
    )
    run = Path(str(result.run_dir))
    forget_specs(run)
    prompt = tmp_path / "p.md"
    prompt.write_text(BETTER, encoding="utf-8")
    args = ["--prompt", str(prompt), "--dataset", str(data_file), "--baseline", str(run)]
    assert cli("check", args).exit_code == 0
    out = tmp_path / "t.jsonl"
    assert cli("export", [str(run), "--training-jsonl", str(out), "--allow-calls"]).exit_code == 0


def interrupt(run: Path) -> None:
    """Make a finished run look killed before it wrote its result."""
    (run / "result.json").unlink()
    meta = json.loads((run / "run.json").read_text(encoding="utf-8"))
    (run / "run.json").write_text(json.dumps({**meta, "pid": None}), encoding="utf-8")


def test_resume_reports_a_changed_rubric_and_accepts_old_configs(
    fake_model: FakeModel, run: Path, data_file: Path
) -> None:
    interrupt(run)
    run_dir = run.parent.parent
    changed = [{**RUBRIC[0], "description": "Is it one word?"}, RUBRIC[1]]
    with pytest.raises(ConfigurationError, match="the options of llm_judge changed"):
        judged_run(data_file, run_dir, criteria_list=changed).run(START, resume=run.name)
    forget_specs(run)  # a run recorded before metric_specs existed still resumes
    resumed = judged_run(data_file, run_dir).run(START, resume=run.name)
    assert resumed.completed and resumed.best_prompt == BETTER
