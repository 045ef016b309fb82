"""``llm_judge``: registers :class:`reflex.judging.judge.LLMJudge` and the ``judge-check`` command.

``--metric llm_judge`` needs a model, so the CLI uses ``--judge provider/model`` instead; by name
from Python: ``add_metric("llm_judge", model="openai/gpt-4o-mini", criteria="rubric.json")``.

``aevyra-reflex judge-check DATASET --judge MODEL --label-field FIELD`` measures how well the
judge agrees with human pass/fail labels (TPR, TNR) before anyone optimizes against it.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import click

from reflex.errors import ConfigurationError, ReflexError
from reflex.hookspecs import hookimpl
from reflex.judging.judge import LLMJudge, judge_channel
from reflex.models.client import ProviderClient
from reflex.types import Example, Score

__all__ = [
    "JudgeAgreement",
    "LLMJudge",
    "check_judge",
    "judge_rows",
    "read_label",
    "register_commands",
    "register_metrics",
]


@dataclass
class JudgeAgreement:
    """How often the judge agrees with human pass/fail labels (``judge-check``).

    TPR: share of human *pass* rows the judge passes. TNR: share of human *fail* rows it fails.
    Failed judgements (unusable replies) are excluded from both and counted in ``failed``.
    """

    threshold: float
    true_pos: int = 0
    false_neg: int = 0
    true_neg: int = 0
    false_pos: int = 0
    failed: int = 0
    disagreements: list[dict[str, Any]] = field(default_factory=list)

    @property
    def n(self) -> int:
        return self.true_pos + self.false_neg + self.true_neg + self.false_pos

    @property
    def tpr(self) -> float | None:
        positives = self.true_pos + self.false_neg
        return self.true_pos / positives if positives else None

    @property
    def tnr(self) -> float | None:
        negatives = self.true_neg + self.false_pos
        return self.true_neg / negatives if negatives else None

    @property
    def accuracy(self) -> float | None:
        return (self.true_pos + self.true_neg) / self.n if self.n else None

    def add(self, example_id: str, label: bool, verdict: Score) -> None:
        if verdict.error is not None:
            self.failed += 1
            return
        passed = verdict.value >= self.threshold
        if label and passed:
            self.true_pos += 1
        elif label:
            self.false_neg += 1
        elif passed:
            self.false_pos += 1
        else:
            self.true_neg += 1
        if passed != label:
            self.disagreements.append(
                {
                    "id": example_id,
                    "label": "pass" if label else "fail",
                    "score": round(verdict.value, 4),
                    "feedback": verdict.feedback or "",
                }
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "tpr": self.tpr,
            "tnr": self.tnr,
            "accuracy": self.accuracy,
            "threshold": self.threshold,
            "true_pos": self.true_pos,
            "false_neg": self.false_neg,
            "true_neg": self.true_neg,
            "false_pos": self.false_pos,
            "failed": self.failed,
            "disagreements": self.disagreements,
        }


_PASS = {"pass", "passed", "true", "yes", "y", "1", "good", "correct", "ok", "acceptable"}
_FAIL = {"fail", "failed", "false", "no", "n", "0", "bad", "incorrect", "unacceptable"}


def read_label(value: Any) -> bool | None:
    """A human pass/fail label from a bool, 0/1 or a word (pass/fail, yes/no...); else None."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    return True if word in _PASS else False if word in _FAIL else None


async def check_judge(
    judge: LLMJudge,
    rows: Sequence[tuple[Example, str, bool]],
    client: ProviderClient,
    threshold: float = 0.5,
) -> JudgeAgreement:
    """Judge each ``(example, response, human_label)`` row concurrently; tally agreement."""
    call = judge_channel(client, judge.judge)
    verdicts = await asyncio.gather(*(judge.ascore(text, ex, call) for ex, text, _ in rows))
    agreement = JudgeAgreement(threshold)
    for (example, _, label), verdict in zip(rows, verdicts, strict=True):
        agreement.add(example.id, label, verdict)
    return agreement


def judge_rows(
    examples: list[Example], label_field: str, response_field: str | None
) -> list[tuple[Example, str, bool]]:
    """(example without reference, response to grade, human label) for each labelled row.

    The response is the row's ``response_field`` (a metadata field) or, by default, its reference
    answer (the dataset's output field). Unreadable labels are an error naming the row.
    """
    rows = []
    for example in examples:
        response = example.metadata.get(response_field) if response_field else example.ideal
        raw = example.metadata.get(label_field)
        if raw is None:
            raise ConfigurationError(f"row {example.id!r} has no label field {label_field!r}")
        label = read_label(raw)
        if label is None:
            raise ConfigurationError(
                f"row {example.id!r} label {raw!r} is not pass/fail (use pass/fail, "
                "yes/no, true/false or 1/0)"
            )
        if response is None:
            where = response_field or "output (reference) field"
            raise ConfigurationError(f"row {example.id!r} has no response in its {where}")
        rows.append((replace(example, ideal=None), str(response), label))
    return rows


def _run_check(params: dict[str, Any]) -> JudgeAgreement:
    from reflex.data.dataset import load_dataset
    from reflex.models.cache import ResponseCache
    from reflex.models.runner import LoopRunner

    dataset = load_dataset(
        params["dataset"], input_field=params["input_field"], output_field=params["output_field"]
    )
    judge = LLMJudge(params["judge"], criteria=params["judge_criteria"], use_reference="never")
    rows = judge_rows(list(dataset), params["label_field"], params["response_field"])
    cache = ResponseCache(Path(params["run_dir"]) / "cache.sqlite")
    client = ProviderClient(max_workers=params["max_workers"], cache=cache)
    try:
        return LoopRunner.shared().run(check_judge(judge, rows, client, params["threshold"]))
    finally:
        cache.close()


def _show(agreement: JudgeAgreement, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(agreement.to_dict(), indent=2))
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
            f"{row['feedback'][:80]}"
        )


@click.command("judge-check")
@click.argument("dataset", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--judge", required=True, metavar="PROVIDER/MODEL", help="The judge model.")
@click.option(
    "--judge-criteria",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
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
@click.option("--output-field", help="Dataset field holding the response (reference field).")
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    default=0.5,
    show_default=True,
    help="A judge score at or above this is a pass.",
)
@click.option("--max-workers", type=click.IntRange(min=1), default=8, show_default=True)
@click.option(
    "--run-dir",
    default=".reflex",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where the response cache lives.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the agreement as JSON.")
def judge_check(**params: Any) -> None:
    """Measure the judge's agreement with human pass/fail labels (TPR, TNR) on DATASET."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        agreement = _run_check(params)
    except ReflexError as exc:
        raise click.ClickException(str(exc)) from None
    _show(agreement, params["as_json"])


@hookimpl
def register_metrics(register: Any) -> None:
    register("llm_judge", LLMJudge)


@hookimpl
def register_commands(cli: Any) -> None:
    cli.add_command(judge_check)
