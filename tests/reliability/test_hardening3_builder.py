"""Issue 29 item 14 (c): with no strategy and no reasoning model named, a run runs what can run
(``auto``, reasoning-free) and says so in one line; the builder and the CLI share that default
(RunConfig's); an explicit ``iterative`` without a reasoning model stays an error."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from conftest import make_rows

from reflex import ConfigurationError, RunConfig
from reflex.cli import main
from reflex.testing import FakeModel
from reflex.testing.endpoint import serve

# The reference documentation's builder snippet, verbatim.
SNIPPET = (
    'PromptOptimizer().set_dataset(ds).add_provider("openai", "gpt-4o-mini")'
    '.add_metric(RougeScore()).run("You are a helpful assistant.")'
)
NOTE = "no strategy and no reasoning model named: running 'auto' (reasoning-free)"


def test_the_documented_snippet_runs_auto_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from aevyra_reflex import PromptOptimizer, RougeScore, load_dataset

    monkeypatch.chdir(tmp_path)
    namespace = {
        "PromptOptimizer": PromptOptimizer,
        "RougeScore": RougeScore,
        "ds": load_dataset(make_rows(), name="reviews"),
    }
    with serve() as url:
        monkeypatch.setenv("OPENAI_BASE_URL", str(url))
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
        with caplog.at_level(logging.WARNING):
            result = eval(SNIPPET, namespace)  # the documented line, verbatim
        assert url.stats().completions > 0
    assert result.completed and result.strategy == "auto"
    notes = [r.getMessage() for r in caplog.records if NOTE in r.getMessage()]
    assert len(notes) == 1
    config = json.loads(Path(str(result.run_dir), "config.json").read_text("utf-8"))
    assert config["strategy"] == "auto" and config["reasoning_model"] is None


def test_one_default_in_run_config_and_an_explicit_iterative_still_needs_one(
    tmp_path: Path,
) -> None:
    from aevyra_reflex import PromptOptimizer

    assert RunConfig(models=["fake/task"]).strategy == "auto"
    assert RunConfig(models=["fake/task"], reasoning_model="fake/r").strategy == "iterative"
    assert RunConfig(models=["fake/task"], strategy="fewshot").strategy == "fewshot"
    with serve() as url:
        opt = (
            PromptOptimizer()
            .set_dataset(make_rows())
            .add_provider("openai", "gpt-4o-mini", api_base=str(url))
            .add_metric("exact_match")
            .set_strategy("iterative")
            .set_run_dir(tmp_path)
        )
        with pytest.raises(ConfigurationError, match="'iterative' needs a reasoning model"):
            opt.run("Classify the sentiment.")
        assert url.stats().requests == 0


def test_the_cli_without_a_strategy_runs_auto_and_says_so(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fake_model: FakeModel,
) -> None:
    monkeypatch.chdir(tmp_path)
    rows = "".join(json.dumps(row) + "\n" for row in make_rows())
    (tmp_path / "data.jsonl").write_text(rows, encoding="utf-8")
    (tmp_path / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["optimize", "data.jsonl", "prompt.md", "-m", "fake/task", "-o", "best.md"])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 0, err
    printed = " ".join((out + err).split())  # the console wraps long lines
    assert printed.count(NOTE) == 1
    assert "strategy=auto" in printed
    assert fake_model.requests and not any(
        r.model.startswith("fake/r") for r in fake_model.requests
    )
