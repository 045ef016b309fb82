"""``aevyra-reflex export``: rewarded rollouts of the best prompt, from the cache, train only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from conftest import BETTER

from reflex import PromptOptimizer
from reflex.cli import build_cli
from reflex.testing import FakeModel


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(build_cli(), ["export", *args], catch_exceptions=False)


@pytest.fixture
def run(fake_model: FakeModel, dataset_file: Path, tmp_path: Path) -> Path:
    result = (
        PromptOptimizer()
        .set_dataset(dataset_file)
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path / "rd")
        .run("Classify the sentiment.")
    )
    assert result.best_prompt == BETTER
    return Path(str(result.run_dir))


def _rows(path: Path) -> list[dict[str, list[dict[str, str]]]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_train_rollouts_need_consent_for_uncached_calls(
    run: Path, fake_model: FakeModel, tmp_path: Path
) -> None:
    out = tmp_path / "train.jsonl"
    # The best prompt saw only minibatches of train: the rest would be paid calls.
    refused = invoke([str(run), "--training-jsonl", str(out)])
    assert refused.exit_code == 2 and "--allow-calls" in refused.output and not out.exists()
    before = len(fake_model.requests)
    done = invoke([str(run), "--training-jsonl", str(out), "--allow-calls"])
    assert done.exit_code == 0, done.output
    paid = len(fake_model.requests) - before
    assert 0 < paid < 18 and f"{paid} paid calls" in done.output
    train = set(json.loads((run / "splits.json").read_text())["train"])
    rows = _rows(out)
    assert len(rows) == 18  # the best prompt answers every train row correctly
    for row in rows:
        system, user, answer = row["messages"]
        assert system == {"role": "system", "content": BETTER}
        assert user["role"] == "user" and answer["role"] == "assistant"
    # Now everything is cached: a second export pays nothing.
    again = invoke([str(run), "--training-jsonl", str(out)])
    assert again.exit_code == 0 and "all from the cache" in again.output
    assert len(fake_model.requests) == before + paid
    assert {r["messages"][1]["content"] for r in _rows(out)} <= {
        f"review {int(i[1:])}: " + w
        for i in train
        for w in ("great film", "awful film", "fine film", "bad film", "lovely film", "poor film")
    }


def test_held_out_split_needs_an_explicit_flag_and_warns(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "test.jsonl"
    refused = invoke([str(run), "--training-jsonl", str(out), "--split", "test"])
    assert refused.exit_code == 2 and "--allow-held-out" in refused.output
    res = invoke([str(run), "--training-jsonl", str(out), "--split", "test", "--allow-held-out"])
    assert res.exit_code == 0, res.output
    assert "warning: exporting test rollouts" in res.output and "all from the cache" in res.output
    assert len(_rows(out)) == 6


def test_min_score_filters_unrewarded_rollouts(run: Path, tmp_path: Path) -> None:
    # Point the run at a weaker "best" prompt: only rewarded rollouts may be exported.
    result = json.loads((run / "result.json").read_text())
    result["best_prompt"] = "Classify the sentiment."
    (run / "result.json").write_text(json.dumps(result))
    out = tmp_path / "t.jsonl"
    args = [str(run), "--training-jsonl", str(out), "--split", "test", "--allow-held-out"]
    assert invoke(args).exit_code == 0
    answers = [r["messages"][-1]["content"] for r in _rows(out)]
    assert answers and all(a in ("positive", "negative") for a in answers)
    assert len(answers) < 6
