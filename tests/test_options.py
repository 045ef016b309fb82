"""The command line's options for run settings (reflex/cli/options.py, ``setting()``): each help is
the RunConfig field's description, then only what the command line says (another flag, a
repeated option's syntax); the defaults a help states are the code's."""

from __future__ import annotations

import re

import click
from test_config import CLI_NAMES, _commands

from reflex.cli.options import DEFAULT_METRIC, REPEAT, optimize_params
from reflex.config import (
    DEFAULT_ITERATIONS,
    BaseRunConfig,
    BudgetConfig,
    RunConfig,
    default_strategy,
)


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
