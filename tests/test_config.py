"""RunConfig is the one place a setting's default and name are written (issue 30, item 1).

The CLI's options, the builder's methods and the standalone defaults of the lower layers all
read them from its fields; the builder holds a validated config, not a dict of settings.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import click
import pytest
from conftest import make_rows
from pydantic import ValidationError

from reflex import PromptOptimizer
from reflex.cli import build_cli
from reflex.cli.options import DEFAULT_METRIC, REPEAT, optimize_params
from reflex.config import (
    DEFAULT_ITERATIONS,
    BaseRunConfig,
    BudgetConfig,
    RunConfig,
    default,
    default_strategy,
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


def _options() -> dict[str, click.Option]:
    """optimize's options by the setting they are for."""
    params = optimize_params()
    return {
        CLI_NAMES.get(str(p.name), str(p.name)): p for p in params if isinstance(p, click.Option)
    }


def _descriptions() -> dict[str, str]:
    return {
        n: f.description
        for model in (BaseRunConfig, BudgetConfig)  # RunConfig's models: no default, same text
        for n, f in model.model_fields.items()
        if f.description
    }


def _cli_only(note: str, option: click.Option) -> bool:
    """Whether ``note``, what follows a description in ``option``'s help, says only what the
    command line says: another flag, the option's own syntax (its METAVAR's words), and for a
    repeated option that it may be repeated."""
    if option.multiple:
        if not note.endswith(REPEAT):
            return False
        note = note.removesuffix(REPEAT)
    syntax = re.findall(r"[A-Z]{2,}", option.metavar or "")
    rest = note.strip()
    return note.startswith(" ") and (not rest or "--" in rest or any(w in rest for w in syntax))


def test_a_described_setting_s_help_is_its_description() -> None:
    options, described = _options(), _descriptions()
    shown = {name: options[name].help or "" for name in described if name in options}
    # The description, then what only the command line says (see _cli_only).
    notes = {name: text.removeprefix(described[name]) for name, text in shown.items()}
    wrong = {
        name: shown[name]
        for name, note in notes.items()
        if note and not (note != shown[name] and _cli_only(note, options[name]))
    }
    assert wrong == {}
    assert {"max_workers", "temperature", "overfit_gap", "score_threshold", "max_calls"} <= set(
        shown
    )
    assert notes["val_split"] == " --val-ratio is the same option."
    # The repeated options too: the field's description, then their syntax.
    repeated = {"models", "variables", "rewrite_messages", "trace_metrics", "guards", "slice_by"}
    repeated |= {"strategy_options", "reasoning_templates", "prices"}
    assert repeated <= {name for name in shown if options[name].multiple}
    assert notes["variables"] == " NAME=FIELD fills {{NAME}} from the row field FIELD. " + REPEAT
    assert _cli_only(" " + REPEAT, options["slice_by"])
    assert not _cli_only(" Metadata keys.", options["slice_by"])  # a description, misplaced
    assert not _cli_only(" Other text.", options["max_workers"])


def test_no_setting_s_help_is_written_by_the_command_line() -> None:
    """An option for a run setting takes its help from the field; only an option whose help is
    command-line syntax through and through may write its own (say why in options.py)."""
    options, described = _options(), _descriptions()
    fields = {*RunConfig.model_fields, *BudgetConfig.model_fields}
    own = sorted(n for n, o in options.items() if n in fields and o.help and n not in described)
    # --metric: NAME:WEIGHT,KEY=VALUE, parsed by reflex.cli.build into three fields.
    assert own == ["metrics"]


def _flags_named_in_help(command: click.Command) -> list[str]:
    """The ``--flags`` the help texts of ``command`` name that are none of its options (text in
    backticks is another program's; ``--name-*`` stands for the options that start so)."""
    own = {opt for p in command.params for opt in p.opts}
    texts = [re.sub(r"`[^`]*`", "", getattr(p, "help", None) or "") for p in command.params]
    named = {m for text in texts for m in re.findall(r"--[a-z][a-z-]*\*?", text)}
    return sorted(
        flag
        for flag in named
        if flag not in own
        and not (flag.endswith("-*") and any(o.startswith(flag[:-1]) for o in own))
    )


def test_a_help_names_only_flags_the_command_has() -> None:
    text = "Ignored without --b, --a or --a-*, `other --c`; see --d-*."
    own = click.Command("x", params=[click.Option(["--a"], help=text), click.Option(["--a-x"])])
    assert _flags_named_in_help(own) == ["--b", "--d-*"]
    wrong = {str(c.name): _flags_named_in_help(c) for c in _commands()}
    assert {name: flags for name, flags in wrong.items() if flags} == {}


def test_the_defaults_a_help_states_are_the_code_s() -> None:
    options = {str(p.name): p.help or "" for p in optimize_params() if isinstance(p, click.Option)}
    assert f"Default: {DEFAULT_METRIC}," in options["metrics"]
    assert f"Default: {DEFAULT_ITERATIONS}," in options["max_iterations"]
    chosen = default_strategy("provider/reasoner"), default_strategy(None)
    assert f"Default: {chosen[0]} with a reasoning model, else {chosen[1]}." in options["strategy"]


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
