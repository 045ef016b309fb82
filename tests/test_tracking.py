"""What every tracker logs the same way (reflex/callbacks/tracking.py): the run's params and
tags without secrets, an iteration's metrics (an unknown cost left out, not 0) and row, and the
adapters' small CLI helpers. The trackers themselves: tests/test_mlflow_* and test_wandb_*."""

from __future__ import annotations

import pytest

from reflex.callbacks.tracking import (
    iteration_metrics,
    iteration_row,
    metric_key,
    parse_tag_pairs,
    run_params,
    run_tags,
    wanted,
)
from reflex.config import RunConfig
from reflex.result import IterationRecord

URL = "https://user:s3cret@llm.internal/v1"


def test_params_and_tags_hold_the_settings_and_no_secret() -> None:
    config = RunConfig(
        models=["openai/m", "openai/n"],
        api_base=URL,
        strategy="iterative",
        strategy_options={"depth": 2, "styles": ["a", "b"]},
        budget={"max_calls": 40},
        tools=[{"type": "function", "function": {"name": "lights", "parameters": {}}}],
    )
    params = run_params(config, "Hello {{name}}")
    assert params["models"] == "openai/m,openai/n" and params["target_model"] == "openai/m"
    assert params["budget_max_calls"] == 40 and params["strategy_depth"] == 2
    assert params["test_split"] == config.test_split and params["tools"] == "lights"
    assert "s3cret" not in str(params) and "s3cret" not in str(run_tags(config))
    tags = run_tags(config, {"team": "search", "api_token": "t0ken"})
    assert tags["reflex.strategy"] == "iterative" and tags["team"] == "search"
    assert "api_token" not in tags  # a secret-named tag is dropped


def test_an_iteration_s_metrics_leave_an_unknown_cost_out() -> None:
    record = IterationRecord(
        3, 0.5, 0.75, {"exact@match": 0.5}, "p", calls=4, tokens=90, cost=0.0, cost_unknown=4
    )
    metrics = iteration_metrics(record)
    assert metrics == {
        "tokens": 90.0,
        "score_train": 0.5,
        "score_val": 0.75,
        "score_exact_match": 0.5,
    }
    priced = IterationRecord(1, None, None, {}, "p", calls=2, cost=0.01, evidence={"p": 0.04})
    assert iteration_metrics(priced) == {"tokens": 0.0, "cost_usd": 0.01, "accept_p": 0.04}
    row = iteration_row(IterationRecord(2, None, 0.6, {}, "p", failed=None, phase="fewshot"))
    assert (row["iteration"], row["val_score"], row["phase"], row["failed"]) == (
        2,
        0.6,
        "fewshot",
        "",
    )


def test_metric_names_every_tracker_accepts() -> None:
    assert metric_key("rouge:L@f1 (x)") == "rouge_L_f1 _x_"
    assert metric_key("json_match.schema") == "json_match.schema"


def test_the_adapters_cli_helpers() -> None:
    assert parse_tag_pairs(["team=search", " stage = dev "]) == {"team": "search", "stage": "dev"}
    with pytest.raises(ValueError, match="'team' is not KEY=VALUE"):
        parse_tag_pairs(["team"])
    assert wanted({"mlflow": False, "mlflow_experiment": "x"}, "mlflow")
    assert not wanted({"mlflow": False, "mlflow_tags": (), "mlflowish": True}, "mlflow")
