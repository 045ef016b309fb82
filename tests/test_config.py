"""RunConfig is the one place a setting's default and name are written (issue 30, item 1).

The CLI's options, the builder's methods and the standalone defaults of the lower layers all
read them from its fields; the builder holds a validated config, not a dict of settings.
"""

from __future__ import annotations

import inspect
from typing import Any

import click
import pytest
from conftest import make_rows
from pydantic import ValidationError

from reflex import PromptOptimizer
from reflex.cli import build_cli
from reflex.config import (
    BaseRunConfig,
    BudgetConfig,
    RunConfig,
    default,
)
from reflex.data.splits import split_dataset
from reflex.models.body_limit import DEFAULT_MAX_RESPONSE_MB
from reflex.models.client import ProviderClient
from reflex.models.retry import RetryPolicy
from reflex.run.pipeline_runner import PipelineRunner
from reflex.run.records import RUN_DIR

# An option named otherwise than its field (optimize's --threshold is score_threshold) ...
CLI_NAMES = {"threshold": "score_threshold"}
# ... and options named like a setting that are another thing: judge-check's pass mark.
NOT_SETTINGS = {("judge-check", "threshold")}
# None on the CLI, the field's "none given" value in RunConfig: -s left out is strategy "".
CLI_NONE = {"strategy": ""}
# What click holds for an option given no default (None, or a sentinel from click 8.3 on).
NO_DEFAULT = click.Option(["--x"]).default


def _field_default(name: str) -> tuple[bool, Any]:
    """Whether ``name`` is a run setting (RunConfig or its budget), and its default."""
    name = CLI_NAMES.get(name, name)
    for model in (RunConfig, BudgetConfig):
        if name in model.model_fields:
            return True, model.model_fields[name].get_default(call_default_factory=True)
    return False, None


def _drift(command: click.Command) -> list[str]:
    """The options of ``command`` for a run setting whose default is not the field's."""
    wrong, ctx = [], click.Context(command)
    for param in command.params:
        known, expected = _field_default(str(param.name))
        known = known and (command.name, param.name) not in NOT_SETTINGS
        # Repeated options hold raw text (NAME:WEIGHT, KEY=VALUE), parsed by the builder step.
        if not known or getattr(param, "multiple", False) or param.required:
            continue
        got = param.get_default(ctx, call=False)
        got = None if got is NO_DEFAULT else got
        if got is None and param.name in CLI_NONE:
            got = CLI_NONE[str(param.name)]
        if got != expected or type(got) is not type(expected):
            wrong.append(f"{command.name} {param.opts[0]}: {got!r}, RunConfig: {expected!r}")
    return wrong


def _commands() -> list[click.Command]:
    group = build_cli()
    assert isinstance(group, click.Group)
    return list(group.commands.values())


def test_the_drift_finder_finds_a_default_written_twice() -> None:
    own = click.Command(
        "x",
        params=[
            click.Option(["--max-workers"], type=int, default=4),
            click.Option(["--train-split"], type=float, default=0.6),
            click.Option(["--threshold"], type=float, default=0.5),
            click.Option(["--max-calls"], type=int, default=100),
            click.Option(["--not-a-setting"], default="x"),
        ],
    )
    assert _drift(own) == [
        "x --max-workers: 4, RunConfig: 8",
        "x --threshold: 0.5, RunConfig: None",
        "x --max-calls: 100, RunConfig: None",
    ]


def test_every_cli_default_is_the_run_config_fields() -> None:
    commands = _commands()
    assert [line for command in commands for line in _drift(command)] == []
    by_name = {c.name: {str(p.name) for p in c.params} for c in commands}
    # The walk sees the settings of every command that shares them.
    assert {"max_workers", "train_split", "run_dir", "max_calls"} <= by_name["optimize"]
    assert {"max_workers", "train_split", "max_calls"} <= by_name["compare"]
    assert {"max_workers", "run_dir"} <= by_name["judge-check"]
    assert {"run_dir"} <= by_name["runs"] & by_name["check"] & by_name["sync"]


def test_standalone_defaults_below_the_config_are_its_fields() -> None:
    client = ProviderClient()
    assert client.settings.max_workers == default("max_workers") == 8
    assert client.settings.cache_namespace == default("cache_namespace")
    assert client.settings.processes == default("client_processes")
    limit = client.settings.max_response_mb
    assert limit == DEFAULT_MAX_RESPONSE_MB == default("max_response_mb")
    assert RetryPolicy().progress_window == default("retry_window")
    signature = inspect.signature(split_dataset).parameters
    assert signature["train"].default == default("train_split") == 0.6
    assert signature["val"].default == default("val_split")
    splits = inspect.signature(PromptOptimizer.set_splits).parameters
    assert (splits["train"].default, splits["val"].default) == (0.6, 0.2)
    assert PipelineRunner.__dataclass_fields__["timeout"].default == default("pipeline_timeout")
    assert RUN_DIR == default("run_dir") == ".reflex"
    assert default("metrics") == [] and default("metrics") is not default("metrics")


def test_the_builder_keeps_a_validated_config_not_a_dict() -> None:
    opt = PromptOptimizer()
    assert not any(isinstance(value, dict) for value in vars(opt).values()), vars(opt)
    assert not hasattr(opt, "_settings") and not hasattr(opt, "_budget")
    opt.configure(budget={"max_calls": 3}, max_workers=2).set_budget(max_cost=1.0)
    assert isinstance(opt._config, BaseRunConfig)
    assert opt._config.budget == BudgetConfig(max_cost=1.0)  # set_budget sets every limit
    assert opt._config.max_workers == 2
    other = opt.clone().configure(max_workers=5)
    assert (opt._config.max_workers, other._config.max_workers) == (2, 5)


def test_an_unnamed_strategy_follows_the_reasoning_model_set_later() -> None:
    def built(opt: PromptOptimizer) -> RunConfig:
        return opt.set_dataset(make_rows()).add_provider("fake/task").build_config()

    reasoning = PromptOptimizer().add_metric("exact_match").set_strategy()
    assert built(reasoning.set_reasoning_model("fake/reasoner")).strategy == "iterative"
    assert reasoning._strategy_named is False
    named = PromptOptimizer().add_metric("exact_match").set_strategy("auto")
    assert built(named.set_reasoning_model("fake/reasoner")).strategy == "auto"
    assert built(PromptOptimizer().add_metric("exact_match")).strategy == "auto"


def test_the_call_limit_is_max_calls_and_older_records_still_read() -> None:
    assert "max_calls" in BudgetConfig.model_fields
    assert "max_metric_calls" not in BudgetConfig.model_fields
    # A config.json written before the rename (export, tracker replay) reads as max_calls ...
    old = {"models": ["fake/task"], "budget": {"max_metric_calls": 7, "max_cost": 1.0}}
    config = RunConfig.model_validate(old)
    assert config.budget == BudgetConfig(max_calls=7, max_cost=1.0)
    # ... and is written back under the one name.
    assert config.model_dump(mode="json")["budget"]["max_calls"] == 7
    assert "max_metric_calls" not in config.model_dump(mode="json")["budget"]
    with pytest.raises(ValidationError, match="max_metric_calls"):
        BudgetConfig.model_validate({"max_calls": 1, "max_metric_calls": 2})
    built = PromptOptimizer().set_budget(max_calls=9)
    assert built._config.budget.max_calls == 9
