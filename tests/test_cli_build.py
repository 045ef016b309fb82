"""From typed ``optimize`` arguments to a configured builder (:mod:`reflex.cli.build`)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from conftest import make_rows

from reflex.cli.args import OptimizeArgs
from reflex.cli.build import build_optimizer, metric_head, var_fields
from reflex.cli.optimize import make_optimize
from reflex.errors import ConfigurationError
from reflex.plugins import Registry


@pytest.fixture
def base(tmp_path: Path) -> list[str]:
    """DATASET PROMPT -m fake/task: the least an ``optimize`` call takes."""
    data, prompt = tmp_path / "d.jsonl", tmp_path / "p.md"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_rows()), encoding="utf-8")
    prompt.write_text("Classify.\n", encoding="utf-8")
    return [str(data), str(prompt), "-m", "fake/task", "--run-dir", str(tmp_path / "runs")]


def _args(argv: list[str]) -> OptimizeArgs:
    ctx = make_optimize(Registry()).make_context("optimize", list(argv))  # click consumes the list
    return OptimizeArgs.from_params(ctx.params)


def test_metric_head_reads_targets_and_weights() -> None:
    assert metric_head("exact_match") == ("exact_match", "", "")
    assert metric_head("exact_match:0.5") == ("exact_match", "", "0.5")
    assert metric_head("mlflow:Correctness") == ("mlflow", "Correctness", "")
    assert metric_head("mlflow:Correctness:2") == ("mlflow", "Correctness", "2")
    assert metric_head("mlflow:my_scorers.positive") == ("mlflow", "my_scorers.positive", "")


def test_var_fields_reads_name_equals_field() -> None:
    assert var_fields((" text = review ", "lang=language")) == {
        "text": "review",
        "lang": "language",
    }
    for bad in ("text", "=review", "text= "):
        with pytest.raises(click.BadParameter, match=f"{bad!r} is not NAME=FIELD"):
            var_fields((bad,))


def test_metrics_weights_and_the_default_metric_reach_the_config(base: list[str]) -> None:
    plain = build_optimizer(_args(base)).build_config()
    assert plain.metric_weights == {"exact_match": 1.0}
    weighted = _args([*base, "--metric", "exact_match:2", "--metric", "contains:0.5"])
    config = build_optimizer(weighted).build_config()
    assert config.metric_weights == {"exact_match": 2.0, "contains": 0.5}


def test_a_judge_alone_replaces_the_default_metric(base: list[str]) -> None:
    config = build_optimizer(_args([*base, "--judge", "fake/judge"])).build_config()
    assert config.metric_weights == {"llm_judge": 1.0}


@pytest.mark.parametrize(
    ("extra", "error", "message"),
    [
        (["--metric", "llm_judge"], ConfigurationError, "--metric llm_judge needs a model"),
        (["--price", "fake/task=0.2"], ConfigurationError, "write MODEL=IN:OUT"),
        (["--score-trace", "contains"], click.BadParameter, "needs --pipeline-file"),
        (["--judge-api-base", "http://127.0.0.1:1"], click.BadParameter, "needs --judge"),
    ],
)
def test_options_that_do_not_fit_are_refused(
    base: list[str], extra: list[str], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        build_optimizer(_args([*base, *extra]))
