"""Issue 29 item 14 (b): calls with no price are "unpriced (N calls)" in every text and no cost
(null in JSON, no tracker metric), never a false ``$0.0000``; a run partly priced shows
``$X + unpriced (N calls)``. Real LiteLLM calls to the local test endpoint: ``openai/m`` has
no price, ``openai/gpt-4o-mini`` has LiteLLM's."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_rows
from mlflow import MlflowClient

from reflex import PromptOptimizer
from reflex.cli import main
from reflex.testing.endpoint import Endpoint, serve
from reflex_mlflow import MLflowCallback

UNPRICED = re.compile(r"unpriced \((\d+) calls\)")


@pytest.fixture
def endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Endpoint]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    rows = "".join(json.dumps(row) + "\n" for row in make_rows(12))
    (tmp_path / "data.jsonl").write_text(rows, encoding="utf-8")
    (tmp_path / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    with serve() as url:
        yield url


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    out, err = capsys.readouterr()
    assert exit_info.value.code == 0, err
    return " ".join((out + err).split())  # the console wraps long lines


def optimize(capsys: pytest.CaptureFixture[str], url: str, *models: str) -> str:
    tasks = [arg for model in models for arg in ("-m", model)]
    common = ["data.jsonl", "prompt.md", *tasks, "--api-base", url, "-s", "instructions"]
    return cli(capsys, "optimize", *common, "--max-iterations", "2", "-o", "best.md")


def only_run(root: Path) -> Path:
    (run,) = (root / ".reflex" / "runs").iterdir()
    return run


def test_an_unpriced_run_says_unpriced_everywhere(
    endpoint: Endpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    printed = optimize(capsys, str(endpoint), "openai/m")
    run = only_run(tmp_path)
    total = json.loads((run / "result.json").read_text("utf-8"))["usage"]["total"]
    assert total["cost"] is None and total["cost_unknown"] == total["calls"] > 0
    assert "$0.0000" not in printed
    assert f"{total['calls']} / {total['tokens']:,} / unpriced ({total['calls']} calls)" in printed
    assert "cost unpriced (" in printed  # each iteration's line
    shown = cli(capsys, "show", run.name)
    assert f"cost unpriced ({total['calls']} calls)" in shown
    listed = cli(capsys, "runs")
    assert f"unpriced ({total['calls']} calls)" in listed
    cli(capsys, "report", run.name, "-o", "report.html")
    html = (tmp_path / "report.html").read_text("utf-8")
    assert f"unpriced ({total['calls']} calls)" in html


def test_a_partly_priced_run_shows_the_priced_part_and_the_unpriced_calls(
    endpoint: Endpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    printed = optimize(capsys, str(endpoint), "openai/gpt-4o-mini", "openai/m")
    usage = json.loads((only_run(tmp_path) / "result.json").read_text("utf-8"))["usage"]
    total = usage["total"]
    assert total["cost"] > 0 and 0 < total["cost_unknown"] < total["calls"]
    assert usage["task"]["cost_unknown"] == total["cost_unknown"]
    assert f"${total['cost']:.4f} + unpriced ({total['cost_unknown']} calls)" in printed


def test_trackers_get_no_false_zero_cost(endpoint: Endpoint, tmp_path: Path, uri: str) -> None:
    callback = MLflowCallback(tracking_uri=uri)
    result = (
        PromptOptimizer()
        .set_dataset(make_rows(12))
        .add_provider("openai/m", api_base=str(endpoint))
        .add_metric("exact_match")
        .set_strategy("instructions")
        .configure(max_iterations=2)
        .set_run_dir(tmp_path / "runs")
        .run("Classify the sentiment.", callbacks=[callback])
    )
    assert result.completed and result.usage["total"]["cost"] is None
    metrics = MlflowClient(tracking_uri=uri).get_run(str(callback.run_id)).data.metrics
    assert "tokens" in metrics and "total_tokens" in metrics  # logged, unlike the cost
    assert "cost_usd" not in metrics and "total_cost_usd" not in metrics
