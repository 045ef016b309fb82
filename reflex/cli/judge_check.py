"""The ``judge-check`` command: a judge's agreement with human pass/fail labels (TPR, TNR)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from reflex.cli.common import EXIT_USAGE, FiniteRange, InputFile, RunDir, hidden_credentials
from reflex.cli.options import judge_api_base_option, setting_option
from reflex.errors import MissingInputError, ProviderError, ReflexError
from reflex.judging.agreement import JudgeAgreement, measure_agreement
from reflex.redact import redact_data, scrub, scrubbed_logs

__all__ = ["judge_check"]


def _show(agreement: JudgeAgreement, as_json: bool) -> None:
    if as_json:  # the judge's feedback is its own text: no secret may ride along with it
        click.echo(json.dumps(redact_data(agreement.to_dict()), indent=2))
        return

    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{100 * value:.1f}%"

    click.echo(
        f"judged {agreement.n} rows (threshold {agreement.threshold}); "
        f"failed judgements: {agreement.failed}"
    )
    click.echo(
        f"TPR (human pass -> judge pass): {pct(agreement.tpr)}  "
        f"[{agreement.true_pos}/{agreement.true_pos + agreement.false_neg}]"
    )
    click.echo(
        f"TNR (human fail -> judge fail): {pct(agreement.tnr)}  "
        f"[{agreement.true_neg}/{agreement.true_neg + agreement.false_pos}]"
    )
    click.echo(f"accuracy: {pct(agreement.accuracy)}")
    for row in agreement.disagreements[:10]:
        click.echo(
            f"  disagree {row['id']}: human {row['label']}, judge {row['score']:.2f} "
            f"{scrub(str(row['feedback']))[:80]}"
        )


@click.command("judge-check")
@click.argument("dataset", type=InputFile("dataset file", sources=True))
@click.option("--judge", required=True, metavar="PROVIDER/MODEL", help="The judge model.")
@judge_api_base_option
@click.option(
    "--judge-criteria",
    type=InputFile("judge criteria file"),
    help="Judge rubric: a JSON criteria file or a plain-text rubric.",
)
@click.option(
    "--label-field",
    required=True,
    help="Field holding the human pass/fail label (pass/fail, yes/no, 1/0).",
)
@click.option(
    "--response-field", help="Field holding the response to grade [default: the output field]."
)
@click.option("--input-field", help="Dataset field holding the input.")
@click.option(
    "--prompt",
    "prompt_path",
    type=InputFile("prompt file"),
    help="The run's chat template (a JSON list of messages): its {{variables}} bind the rows "
    "as optimize binds them, and the judge sees each row's input as its variables.",
)
@click.option(
    "--var",
    "variables",
    multiple=True,
    metavar="NAME=FIELD",
    help="With --prompt: fill {{NAME}} from the row field FIELD; repeat for several.",
)
@click.option("--output-field", help="Dataset field holding the response (reference field).")
@click.option(
    "--threshold",
    type=FiniteRange(0, 1),
    default=0.5,
    show_default=True,
    help="A judge score at or above this is a pass.",
)
@setting_option("--max-workers", type=click.IntRange(min=1), help="Judge calls in flight at once.")
@setting_option("--run-dir", type=RunDir(), help="Where the response cache lives.")
@click.option("--json", "as_json", is_flag=True, help="Print the agreement as JSON.")
def judge_check(**params: Any) -> None:
    """Measure the judge's agreement with human pass/fail labels (TPR, TNR) on DATASET."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    url = params["judge_api_base"]
    params["variables"] = _template_fields(params.pop("prompt_path"), params["variables"])
    try:
        # Warnings and log records may quote the judge's answers, and the URL its credentials.
        with scrubbed_logs(), hidden_credentials(url):
            agreement = measure_agreement(params)
    except ProviderError as exc:  # the judge failed, not the input: exit 1
        raise click.ClickException(scrub(str(exc), url)) from None
    except ReflexError as exc:  # bad input: one line, exit 2, like every other command
        missing = isinstance(exc, MissingInputError) and not params["variables"]
        hint = "; rows of a chat template: pass --prompt FILE" if missing else ""
        click.echo(f"error: {scrub(str(exc), url)}{hint}", err=True)
        sys.exit(EXIT_USAGE)
    _show(agreement, params["as_json"])


def _template_fields(path: str | None, items: tuple[str, ...]) -> dict[str, str] | None:
    """The row field of each variable of the chat template at ``path`` (``--var`` mappings
    first), as optimize binds rows; None without a template."""
    from reflex.cli.build import var_fields
    from reflex.data.demos import template_fields
    from reflex.data.prompts import prompt_spec

    mapping = var_fields(items)
    if path is None:
        if mapping:
            raise click.BadParameter("--var needs the chat template: pass --prompt FILE")
        return None
    fields = template_fields(prompt_spec(Path(path)).render(), mapping)
    if fields is None:
        raise click.BadParameter(f"{path} is not a chat template with {{{{variables}}}}")
    return fields
