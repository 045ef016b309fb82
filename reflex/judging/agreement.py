"""How far a judge can be trusted: its agreement with human pass/fail labels (``judge-check``).

TPR: share of human *pass* rows the judge passes. TNR: share of human *fail* rows it fails.
Measure it before optimizing against a judge.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from reflex.data.dataset import load_dataset
from reflex.errors import ConfigurationError
from reflex.judging.judge import LLMJudge, judge_channel
from reflex.models.cache import ResponseCache
from reflex.models.client import ClientSettings, ProviderClient
from reflex.models.runner import LoopRunner
from reflex.types import Example, Score

__all__ = ["JudgeAgreement", "check_judge", "judge_rows", "measure_agreement", "read_label"]


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


def measure_agreement(params: dict[str, Any]) -> JudgeAgreement:
    """Judge every labelled row of ``params["dataset"]`` (the ``judge-check`` options)."""
    dataset = load_dataset(
        params["dataset"],
        input_field=params["input_field"],
        output_field=params["output_field"],
        variables=params.get("variables"),  # a chat template's variable -> field, as optimize
    )
    judge = LLMJudge(
        params["judge"],
        criteria=params["judge_criteria"],
        use_reference="never",
        api_base=params.get("judge_api_base"),
    )
    rows = judge_rows(list(dataset), params["label_field"], params["response_field"])
    cache = ResponseCache(Path(params["run_dir"]) / "cache.sqlite")
    client = ProviderClient(ClientSettings(max_workers=params["max_workers"]), cache=cache)
    try:
        return LoopRunner.shared().run(check_judge(judge, rows, client, params["threshold"]))
    finally:
        cache.close()
