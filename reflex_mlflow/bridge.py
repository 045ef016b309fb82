"""Between MLflow's ``optimize_prompts`` and a reflex run (:mod:`reflex_mlflow.optimizer`).

MLflow hands an optimizer ``eval_fn(candidates, records)``: it patches the candidate template
into every ``PromptVersion``, calls the user's ``predict_fn`` on each record's inputs and scores
the outputs with the user's scorers. Reflex runs that as a pipeline (:mod:`reflex.data.pipeline`):

- :class:`PromptForm`: the MLflow template (text, or a chat template as JSON) as reflex's prompt
  (:func:`reflex_mlflow.prompts.template_spec`, the one conversion), whose ``{{variables}}``
  every candidate must keep (the template guard), and back;
- :func:`records`: MLflow's ``train_data`` as reflex records, each with a stable id;
- :class:`Bridge`: the pipeline function: one row through ``eval_fn`` (serialized: ``eval_fn``
  patches a class, so two candidates must never be in it at once; rows of one candidate that
  wait together go in one call, which MLflow runs on its own threads);
- :class:`MlflowScorers`: the metric that reads the scorers' verdict back from the row's trace.

Model calls: the predict_fn's are the user's own (reflex neither sees, caches nor counts them;
MLflow traces them); the reasoning model's go through reflex's client (cached, counted, in the
budget). The task model of the run is named :data:`PREDICT_MODEL`; reflex never calls it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reflex.api import (
    ConfigurationError,
    Example,
    PromptSpec,
    Score,
    placeholders,
    register_provider,
    saved_template,
)
from reflex_mlflow.datasets import row
from reflex_mlflow.prompts import chat_messages, template_spec

if TYPE_CHECKING:
    from types import ModuleType

    from mlflow.genai.optimize.types import EvaluationResultRecord

__all__ = [
    "PREDICT_MODEL",
    "SCORE_STEP",
    "Bridge",
    "MlflowScorers",
    "PromptForm",
    "Serial",
    "records",
]

PROVIDER = "mlflow"
PREDICT_MODEL = f"{PROVIDER}/predict_fn"
SCORE_STEP = "mlflow_scorers"
_FAILED = "Failed to invoke the predict_fn"  # how MLflow's eval_fn reports a predict_fn error


@dataclass(frozen=True)
class PromptForm:
    """One MLflow prompt as reflex's prompt (``spec``: :func:`reflex_mlflow.prompts.template_spec`,
    the conversion ``prompts:/`` URIs use too), ``chat`` whether MLflow holds it as a chat
    prompt (the form its winner goes back in)."""

    name: str
    spec: PromptSpec
    chat: bool

    @classmethod
    def parse(cls, name: str, template: str) -> PromptForm:
        """MLflow's template (chat prompts arrive as the JSON of their message list)."""
        where = f"prompt {name!r}"
        return cls(name, template_spec(template, where), chat_messages(template) is not None)

    @property
    def messages(self) -> list[dict[str, str]]:
        """The chat template's messages (a text prompt with variables: one user message);
        empty for a text prompt without variables (a system prompt)."""
        return self.spec.messages or []

    @property
    def variables(self) -> list[str]:
        return list(dict.fromkeys(v for m in self.messages for v in placeholders(m["content"])))

    def mlflow_template(self, candidate: str) -> str:
        """A candidate (the prompt's string form, demos and all) as MLflow's template: the JSON
        message list for a chat prompt, the text for a text prompt (its demo turns, if a
        strategy added some, before it as plain paragraphs; a system prompt as it is)."""
        messages = saved_template(candidate)
        if messages is None and self.spec.is_single:
            return candidate
        if messages is None:  # the guard keeps candidates templates: never reached in a run
            raise ConfigurationError(f"not a chat template's string form: {candidate[:80]!r}")
        if self.chat:
            return json.dumps(messages, ensure_ascii=False)
        return "\n\n".join(m["content"] for m in messages)


def records(
    train_data: Sequence[Mapping[str, Any]], variables: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """MLflow's records by a stable id: its ``dataset_record_id``, else a hash of the record
    (a repeat gets ``-2``, ``-3``...). Every record needs each template variable as an input."""
    found: dict[str, dict[str, Any]] = {}
    for number, record in enumerate(train_data, start=1):
        inputs = record.get("inputs")
        missing = [v for v in variables if not isinstance(inputs, Mapping) or v not in inputs]
        if missing:
            raise ConfigurationError(
                f"train_data record {number}: no input {missing[0]!r} for the template variable "
                f"{{{{{missing[0]}}}}}; each record's inputs fill the prompt's variables"
            )
        given = record.get("dataset_record_id")
        base = str(given) if given else _digest(record)
        rid, repeat = base, 1
        while rid in found:
            repeat += 1
            rid = f"{base}-{repeat}"
        found[rid] = dict(record)
    return found


def _digest(record: Mapping[str, Any]) -> str:
    keys = ("inputs", "outputs", "expectations")
    text = json.dumps({k: record.get(k) for k in keys}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def expectations(record: Mapping[str, Any]) -> dict[str, Any]:
    """What MLflow's eval_fn scores a record against (its own rule)."""
    given = record.get("expectations")
    return dict(given) if given else {"expected_response": record.get("outputs")}


def reflex_rows(found: Mapping[str, Mapping[str, Any]]) -> list[dict[str, object]]:
    """The records as reflex rows: inputs as fields, the expectation as the reference."""
    return [
        row(rid, record.get("inputs"), expectations(record), "train_data")
        for rid, record in found.items()
    ]


@dataclass
class _Job:
    record: Mapping[str, Any]
    done: threading.Event = field(default_factory=threading.Event)
    result: EvaluationResultRecord | None = None
    error: BaseException | None = None


class Serial:
    """``eval_fn`` one call at a time (it patches ``PromptVersion.template`` process-wide);
    the rows of one candidate that queue meanwhile share the next call."""

    def __init__(self, eval_fn: Callable[..., list[EvaluationResultRecord]]) -> None:
        self.eval_fn = eval_fn
        self.calls = 0
        self._turn = threading.Lock()
        self._queue = threading.Lock()
        self._waiting: dict[str, list[_Job]] = {}

    def evaluate(self, candidates: Mapping[str, str], record: Mapping[str, Any]) -> Any:
        key = json.dumps(dict(candidates), sort_keys=True)
        job = _Job(record)
        with self._queue:
            self._waiting.setdefault(key, []).append(job)
        with self._turn:
            if not job.done.is_set():
                with self._queue:
                    batch = self._waiting.pop(key, [])
                self._run(dict(candidates), batch)
        if job.error is not None:
            raise job.error
        return job.result

    def _run(self, candidates: dict[str, str], batch: list[_Job]) -> None:
        try:
            self.calls += 1
            results = self.eval_fn(candidates, [dict(job.record) for job in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"eval_fn gave {len(results)} results for {len(batch)} rows")
            for job, result in zip(batch, results, strict=True):
                job.result = result
        except Exception as exc:  # noqa: BLE001 - each waiting row fails with it
            for job in batch:
                job.error = exc
        finally:
            for job in batch:
                job.done.set()


class PredictError(RuntimeError):
    """The user's predict_fn raised on a row (MLflow's eval_fn caught it and said so)."""


@dataclass
class Bridge:
    """The pipeline function: ``run(prompt, input, *, example)`` -> output and trace."""

    form: PromptForm
    rows: Mapping[str, Mapping[str, Any]]
    serial: Serial

    def __call__(self, prompt: str, input: str, *, example: Example) -> dict[str, object]:
        record = self.rows[example.id]
        candidate = self.form.mlflow_template(prompt)
        result = self.serial.evaluate({self.form.name: candidate}, record)
        outputs = result.outputs
        if isinstance(outputs, str) and outputs.startswith(_FAILED):
            raise PredictError(outputs)
        verdict = {
            "score": result.score,
            "scores": dict(result.individual_scores or {}),
            "rationales": {k: v for k, v in (result.rationales or {}).items() if v},
        }
        return {
            "output": outputs if isinstance(outputs, str) else json.dumps(outputs, default=str),
            "steps": [
                {"name": "predict_fn", "input": record.get("inputs"), "output": outputs},
                {"name": SCORE_STEP, "input": result.expectations, "output": verdict},
            ],
        }


class MlflowScorers:
    """MLflow's scorers as a reflex metric: the verdict ``eval_fn`` gave the row, read from its
    trace (the aggregate as the score, each scorer as an objective, the rationales as
    feedback). A verdict outside [0, 1] or missing is an error, never a 0."""

    name = SCORE_STEP
    requires_reference = False
    scores_trace = True

    def score(self, output: str, example: Example) -> Score:
        try:
            steps = json.loads(output)["steps"]
            verdict = next(s["output"] for s in steps if s["name"] == SCORE_STEP)
        except (ValueError, KeyError, TypeError, StopIteration):
            return Score(0.0, error="no MLflow scorer verdict in the row's trace")
        value = verdict.get("score")
        if value is None:
            return Score(0.0, error="no scorer: pass scorers=[...] to optimize_prompts")
        if not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
            return Score(
                0.0,
                error=f"the scorers' aggregate is {value!r}, outside [0, 1]: pass an "
                "aggregation that returns a value in [0, 1]",
            )
        scores = {
            str(k): float(v)
            for k, v in verdict.get("scores", {}).items()
            if isinstance(v, int | float) and 0.0 <= v <= 1.0
        }
        rationales = verdict.get("rationales") or {}
        feedback = "; ".join(f"{k}: {v}" for k, v in rationales.items()) or None
        return Score(float(value), feedback=feedback, objectives=scores)


def _refusing_provider(litellm: ModuleType) -> Any:
    class PredictFn(litellm.CustomLLM):  # type: ignore[name-defined,misc]
        def completion(self, *args: Any, **kwargs: Any) -> Any:
            raise ConfigurationError(
                f"{PREDICT_MODEL} is MLflow's predict_fn, run through eval_fn: reflex makes no "
                "call to it (a judge or pipeline call needs a real model)"
            )

        async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
            return self.completion()

    return PredictFn()


register_provider(PROVIDER, _refusing_provider)
