"""``aevyra-reflex --help`` without loading a plugin: the command list from a table.

Building the real command group loads every plugin (strategies, metrics and their pydantic
option models, the judge) to collect the options they add: ~0.3 s before a word is printed.
The top-level help needs only each command's name and first line, so ``main`` answers
``--help`` / ``-h`` / ``--version`` / no arguments from :data:`COMMANDS` when no installed
distribution other than ours registers plugins (one of them could add a command) and none was
registered in this process. A test checks the table against the real group.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

__all__ = ["COMMANDS", "help_only", "summary_cli"]

HELP_ONLY = ((), ("--help",), ("-h",), ("--version",))

# Each built-in command's first help paragraph (what ``--help`` shows, shortened to fit).
COMMANDS = {
    "check": "Score --prompt and fail (exit 1) if it regresses below --baseline beyond "
    "--tolerance.",
    "compare": "Compare strategies on DATASET (and each --dataset) with PROMPT at the same "
    "metric-call budget (--max-calls): per dataset, mean and sd of the final test score over "
    "seeds, mean calls, tokens, cost, and a paired sign-flip p-value against the best.",
    "export": "Write the best prompt's rewarded rollouts of RUN as chat-format training examples.",
    "judge-check": "Measure the judge's agreement with human pass/fail labels (TPR, TNR) on "
    "DATASET.",
    "optimize": "Optimize PROMPT on DATASET (JSONL or CSV).",
    "plugins": "List the loaded plugins and what each registers.",
    "promote": "Point --alias at the prompt version RUN registered, if it does not regress "
    "against the version the alias holds now (check's rule, on the run's test rows or "
    "--dataset).",
    "report": "Write RUN's report as one HTML file (no scripts, no network).",
    "rollback": "Point --alias of the registered prompt NAME back at the version it held before "
    "the last promote.",
    "runs": "List the runs in the run directory (newest last).",
    "show": "Print one run's summary, iterations and the prompt diff (RUN_ID may be a prefix).",
    "sync": "Replay the recorded run RUN (an id, a run folder or its result.json) into MLflow "
    "and/or W&B.",
    "verify": "Check that RECORD (a run id, run folder or result.json) is unchanged since its "
    "run ended.",
}


def help_only(args: Sequence[str]) -> bool:
    """Whether ``args`` only ask for the top-level help or version, which the table answers."""
    return tuple(args) in HELP_ONLY and not _plugins_may_add_commands()


def _plugins_may_add_commands() -> bool:
    plugins = sys.modules.get("reflex.plugins")
    if plugins is not None and getattr(plugins, "_REGISTRY", None):
        return True  # a registry exists in this process: plugins may have been added to it
    from importlib.metadata import entry_points

    return any(
        entry.dist is None or entry.dist.name != "aevyra-reflex"
        for entry in entry_points(group="reflex")
    )


def summary_cli(group: type[click.Group], version: str) -> click.Group:
    """A group with the real one's name, help and options and stub commands from the table."""

    @click.group(cls=group, context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(version, prog_name="aevyra-reflex")
    def cli() -> None:
        """aevyra-reflex: measure a prompt, improve it, and prove the gain on held-out data."""

    for name, text in COMMANDS.items():
        cli.add_command(click.Command(name, help=text))
    return cli
