"""``aevyra-reflex export RUN --training-jsonl out.jsonl``: rollouts for distillation."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from reflex.cli.args import checked_params
from reflex.cli.check import judge_options
from reflex.cli.common import FiniteRange, InputFile, OutputFile
from reflex.cli.runs import RUN_DIR

__all__ = ["ExportArgs", "export_command"]


@dataclass(frozen=True)
class ExportArgs:
    """Every ``export`` argument and option, typed (converted once, in export_command)."""

    run: str
    output: Path
    min_score: float
    split: str
    allow_held_out: bool
    allow_calls: bool
    dataset_path: Path | None
    input_field: str | None
    output_field: str | None
    api_base: str | None
    judge: str | None
    judge_criteria: Path | None
    judge_api_base: str | None
    run_dir: str
    verbose: bool

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> ExportArgs:
        return cls(**checked_params(cls, params, "export"))


@click.command("export")
@click.argument("run")
@click.option(
    "--training-jsonl",
    "output",
    required=True,
    type=OutputFile(),
    help="Where to write the chat-format examples (one JSON object a line).",
)
@click.option(
    "--min-score",
    type=FiniteRange(0.0, 1.0),
    default=1.0,
    show_default=True,
    help="Keep rollouts scoring at least this.",
)
@click.option(
    "--split",
    type=click.Choice(["train", "val", "test"]),
    default="train",
    show_default=True,
    help="Whose rollouts; val/test also need --allow-held-out.",
)
@click.option(
    "--allow-held-out", is_flag=True, help="Allow --split val/test (leaks held-out rows)."
)
@click.option(
    "--allow-calls",
    is_flag=True,
    help="Pay for rollouts not in the run's cache (otherwise refuse and say how many).",
)
@click.option(
    "--dataset",
    "dataset_path",
    type=InputFile("dataset file", sources=True),
    default=None,
    help="The run's dataset file [default: the file recorded in run.json].",
)
@click.option("--input-field", default=None, help="Name of the input field.")
@click.option("--output-field", default=None, help="Name of the reference field.")
@click.option("--api-base", default=None, help="Endpoint, if the run's was stored redacted.")
@judge_options
@RUN_DIR
@click.option("-v", "--verbose", is_flag=True, help="Tracebacks for errors.")
def export_command(**params: Any) -> None:
    """Write the best prompt's rewarded rollouts of RUN as chat-format training examples.

    Rollouts come from the run's response cache; rows not there would be paid calls, which
    need --allow-calls. RUN: a run id (prefix), a run folder or a result.json.
    """
    from reflex.cli.common import hidden_credentials, with_errors

    args = ExportArgs.from_params(params)
    with hidden_credentials(args.api_base, args.judge_api_base):
        with_errors(_export)(args)


def _export(args: ExportArgs) -> None:
    from reflex.cli.outputs import refuse_clobbering
    from reflex.data.dataset import load_dataset
    from reflex.data.demos import template_fields
    from reflex.data.files import atomic_write_text
    from reflex.errors import ConfigurationError
    from reflex.run.export import held_out_warning, plan_export, training_examples
    from reflex.run.gate import supplied_judge
    from reflex.run.records import read_json, resolve_run

    split = args.split
    warning = held_out_warning(split)
    if warning and not args.allow_held_out:
        raise ConfigurationError(
            f"--split {split} exports held-out rows the run was scored on; pass "
            "--allow-held-out to do it anyway"
        )
    path = resolve_run(args.run, args.run_dir)
    source = args.dataset_path or read_json(path / "run.json").get("dataset_source")
    if not source:
        raise ConfigurationError("the run recorded no dataset file: pass --dataset FILE")
    refuse_clobbering({"--training-jsonl": args.output}, {"dataset": source, "run": path})
    best = str(read_json(path / "result.json").get("best_prompt") or "")
    fields = template_fields(best, read_json(path / "config.json").get("variables"))
    dataset = load_dataset(
        source, input_field=args.input_field, output_field=args.output_field, variables=fields
    )
    judges = supplied_judge(args.judge, args.judge_criteria)
    plan = plan_export(
        path,
        dataset,
        split,
        api_base=args.api_base,
        supplied=judges,
        judge_api_base=args.judge_api_base,
    )
    if plan.uncached and not args.allow_calls:
        plan.close()
        raise ConfigurationError(
            f"{plan.uncached} of {len(plan.examples) * len(plan.evaluator.models)} {split} "
            "rollouts of the best prompt are not in the run's cache and would be paid model "
            "calls: pass --allow-calls to make them"
        )
    if warning:
        click.echo(warning, err=True)
    if plan.uncached:
        plan.keep_paid_answers()  # the only write into the run directory: what was paid for
    snapshot = plan.rollouts()
    rows = training_examples(plan, snapshot, args.min_score)
    output = args.output
    atomic_write_text(output, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    paid = f", {plan.uncached} paid calls" if plan.uncached else ", all from the cache"
    click.echo(
        f"wrote {len(rows)} of {len(snapshot.samples)} {split} rollouts "
        f"(score >= {args.min_score}{paid}) to {output}"
    )
