"""The LLM judge: rubric, prompt, robust parsing of the reply, and agreement with human labels.

A judge is a *model-graded* metric (:class:`reflex.types.ModelGradedMetric`): the evaluator
hands it a ``JudgeCall`` that sends messages through the run's provider client under the
"judge" role, so judge calls are cached, counted and share the run's concurrency limit.

An unusable reply is retried with a repair turn (a new message, so the cache does not replay the
bad reply) and, if still unusable, becomes a failed judgement: a Score with ``error`` set, which
the evaluator excludes and counts. It is never scored as a midpoint.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

from reflex.data.files import file_problem
from reflex.data.json_types import JSONDict
from reflex.errors import ConfigurationError
from reflex.judging.parse import JudgeParseError, parse_grades
from reflex.models.client import ClientSettings, ModelSpec, ProviderClient, parse_model
from reflex.types import Example, JudgeCall, Score

__all__ = [
    "DEFAULT_CRITERIA",
    "Criterion",
    "JudgeParseError",
    "LLMJudge",
    "Rubric",
    "judge_channel",
    "load_rubric",
    "parse_grades",
]

ReferenceUse = Literal["auto", "always", "never"]


@dataclass(frozen=True)
class Criterion:
    """One graded aspect. ``gate``: a grade below it makes the whole example score 0."""

    name: str
    description: str
    weight: float = 1.0
    gate: int | None = None

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ConfigurationError("a judge criterion needs a non-empty name")
        if self.weight < 0:
            raise ConfigurationError(f"criterion {self.name!r} weight must be >= 0")


DEFAULT_CRITERIA = (
    Criterion(
        "correctness",
        "Does what the input asks, accurately; agrees with the reference answer when one is given.",
        weight=2.0,
    ),
    Criterion("completeness", "Covers everything the input asks for, without padding."),
    Criterion("clarity", "Clear, well organised, in the format the input asks for."),
)


@dataclass(frozen=True)
class Rubric:
    """Criteria graded on the integer scale ``low..high`` plus optional extra instructions."""

    criteria: tuple[Criterion, ...] = DEFAULT_CRITERIA
    low: int = 1
    high: int = 5
    instructions: str = ""

    def __post_init__(self) -> None:
        if self.high <= self.low:
            raise ConfigurationError(f"judge scale {self.low}..{self.high} is empty")
        if not self.criteria:
            raise ConfigurationError("a judge rubric needs at least one criterion")
        names = [c.name for c in self.criteria]
        if len(set(names)) != len(names):
            raise ConfigurationError(f"judge criteria names repeat: {names}")
        if sum(c.weight for c in self.criteria) <= 0:
            raise ConfigurationError("judge criteria weights sum to 0")
        for c in self.criteria:
            if c.gate is not None and not self.low <= c.gate <= self.high:
                raise ConfigurationError(
                    f"criterion {c.name!r} gate {c.gate} is outside the scale "
                    f"{self.low}..{self.high}"
                )

    def normalise(self, grade: int) -> float:
        return (grade - self.low) / (self.high - self.low)


def _criterion(item: object, where: str) -> Criterion:
    if isinstance(item, Criterion):
        return item
    if isinstance(item, str):
        name, sep, description = item.partition(":")
        return Criterion(name.strip(), description.strip() if sep else name.strip())
    if isinstance(item, Mapping):
        unknown = set(item) - {"name", "description", "weight", "gate"}
        if unknown or "name" not in item:
            raise ConfigurationError(
                f"{where}: a criterion needs 'name' and may have 'description', 'weight', "
                f"'gate'; got keys {sorted(item)}"
            )
        return Criterion(
            str(item["name"]),
            str(item.get("description", item["name"])),
            float(item.get("weight", 1.0)),
            item.get("gate"),
        )
    raise ConfigurationError(f"{where}: cannot read a criterion from {item!r}")


def load_rubric(path: str | Path) -> Rubric:
    """A rubric file: JSON (``{"scale": [1, 5], "criteria": [...], "instructions": ""}`` or a
    list of criteria), or any other text file, used as one criterion named ``rubric``."""
    file = Path(path)
    problem = file_problem(file, "judge criteria file")  # a FIFO would block the read forever
    if problem is not None:
        raise ConfigurationError(f"{file}: {problem}")
    try:
        text = file.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError):
        raise ConfigurationError(f"{file}: judge criteria file not found") from None
    if not text.strip():
        raise ConfigurationError(f"{file}: judge criteria file is empty")
    if file.suffix.lower() != ".json":
        return Rubric(criteria=(Criterion("rubric", text.strip()),))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{file}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    if isinstance(data, list):
        data = {"criteria": data}
    if not isinstance(data, dict):
        raise ConfigurationError(f"{file}: expected a JSON object or list of criteria")
    low, high = data.get("scale", (1, 5))
    criteria = tuple(_criterion(c, str(file)) for c in data.get("criteria", ()))
    return Rubric(
        criteria or DEFAULT_CRITERIA, int(low), int(high), str(data.get("instructions", ""))
    )


def _conversation(example: Example) -> str:
    turns = [m for m in example.messages if m.get("role") != "system"]
    if len(turns) == 1:
        return str(turns[0].get("content") or "")
    return "\n".join(f"{m.get('role', 'user')}: {m.get('content', '')}" for m in turns)


def build_messages(
    rubric: Rubric, output: str, example: Example, use_reference: bool
) -> list[dict[str, str]]:
    """The judge conversation for one output (deterministic, so it caches)."""
    shape = ", ".join(
        f'"{c.name}": {{"grade": <int>, "reason": "<one sentence>"}}' for c in rubric.criteria
    )
    system = (
        "You are an impartial, strict evaluator. Grade the RESPONSE on each criterion with an "
        f"integer from {rubric.low} (worst) to {rubric.high} (best). Never quote the reference "
        "answer in your reasons. Reply with only this JSON object:\n"
        f'{{"criteria": {{{shape}}}}}'
    )
    lines = []
    for c in rubric.criteria:
        gate = f" (must be at least {c.gate})" if c.gate is not None else ""
        lines.append(f"- {c.name}: {c.description}{gate}")
    parts = [f"## Input\n{_conversation(example)}"]
    if use_reference and example.ideal is not None:
        parts.append(f"## Reference answer\n{example.ideal}")
    parts.append(f"## Response\n{output}")
    parts.append("## Criteria\n" + "\n".join(lines))
    if rubric.instructions:
        parts.append(f"## Instructions\n{rubric.instructions}")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def _repair(reason: str) -> str:
    return (
        f"Your reply could not be used: {reason}. Reply again with only the JSON object "
        "described above, one integer grade per criterion."
    )


class LLMJudge:
    """A model-graded metric: ``LLMJudge("openai/gpt-4o-mini", criteria=...)``.

    ``criteria`` is rubric text, or a path to a rubric file (see :func:`load_rubric`);
    ``criteria_list`` is a list of :class:`Criterion`, dicts or ``"name: description"`` strings.
    Neither gives :data:`DEFAULT_CRITERIA`. The score is the weighted mean of the normalised
    grades (0 when a gated criterion is below its gate); each criterion is an objective.
    ``use_reference``: ``auto`` shows the reference to the judge when the row has one, ``never``
    hides it, ``always`` makes the judge a reference metric (rows without one are skipped).
    ``instructions`` replaces the rubric's extra instructions. :meth:`to_config` records it all
    in config.json, so ``check`` and ``export`` rebuild the same judge.
    """

    model_graded = True

    def __init__(
        self,
        model: str,
        *,
        criteria: str | Path | None = None,
        criteria_list: Sequence[Criterion | Mapping[str, object] | str] | None = None,
        scale: tuple[int, int] = (1, 5),
        use_reference: ReferenceUse = "auto",
        parse_retries: int = 2,
        name: str = "llm_judge",
        api_base: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        instructions: str | None = None,
    ) -> None:
        if criteria is not None and criteria_list is not None:
            raise ConfigurationError("give the judge criteria= or criteria_list=, not both")
        if use_reference not in ("auto", "always", "never"):
            raise ConfigurationError(f"use_reference={use_reference!r}: use auto|always|never")
        if parse_retries < 0:
            raise ConfigurationError(f"parse_retries must be >= 0, got {parse_retries}")
        self.rubric = _make_rubric(criteria, criteria_list, scale)
        if instructions is not None:
            self.rubric = replace(self.rubric, instructions=instructions)
        self.name = name
        self.use_reference = use_reference
        self.requires_reference = use_reference == "always"
        self.parse_retries = parse_retries
        self.judge = ModelSpec(
            parse_model(model),
            api_base=api_base,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=0,
        )

    def __repr__(self) -> str:
        names = ", ".join(c.name for c in self.rubric.criteria)
        return f"LLMJudge({self.judge.model!r}, criteria=[{names}])"

    def to_config(self) -> JSONDict:
        """The options that rebuild this judge (``registry.metric("llm_judge", **options)``).

        The rubric is stored by content (criteria, scale, instructions), not by file path, and
        the judge's ``api_base`` only in redacted form: config.json never holds credentials.
        """
        from reflex.redact import redact_url

        rubric = self.rubric
        options: JSONDict = {
            "model": self.judge.model,
            "criteria_list": [asdict(c) for c in rubric.criteria],
            "scale": [rubric.low, rubric.high],
            "instructions": rubric.instructions,
            "use_reference": self.use_reference,
            "parse_retries": self.parse_retries,
            "name": self.name,
            "temperature": self.judge.temperature,
            "max_tokens": self.judge.max_tokens,
        }
        if self.judge.api_base is not None:
            options["api_base"] = redact_url(self.judge.api_base)
        return {"name": "llm_judge", "options": options}

    async def ascore(self, output: str, example: Example, call: JudgeCall) -> Score:
        """Ask the judge (through ``call``), retrying unusable replies with a repair turn."""
        messages = build_messages(self.rubric, output, example, self.use_reference != "never")
        reason = ""
        for _attempt in range(self.parse_retries + 1):
            reply = await call(messages)
            try:
                grades = parse_grades(
                    reply, [c.name for c in self.rubric.criteria], self.rubric.low, self.rubric.high
                )
            except JudgeParseError as exc:
                reason = str(exc)
                messages = [
                    *messages,
                    {"role": "assistant", "content": reply},
                    {"role": "user", "content": _repair(reason)},
                ]
                continue
            return self._verdict(grades)
        attempts = self.parse_retries + 1
        return Score(
            0.0, error=f"failed judgement: unusable reply after {attempts} attempt(s): {reason}"
        )

    def score(self, output: str, example: Example) -> Score:
        """Standalone scoring with a private, uncached client (not from the loop's own thread).

        Inside a run the evaluator calls :meth:`ascore` with the run's shared channel instead.
        """
        from reflex.models.runner import LoopRunner

        client = ProviderClient(ClientSettings(max_workers=1))
        call = judge_channel(client, self.judge)
        return LoopRunner.shared().run(self.ascore(output, example, call))

    def _verdict(self, grades: Mapping[str, tuple[int, str]]) -> Score:
        rubric = self.rubric
        objectives = {c.name: rubric.normalise(grades[c.name][0]) for c in rubric.criteria}
        total = sum(c.weight for c in rubric.criteria)
        value = sum(c.weight * objectives[c.name] for c in rubric.criteria) / total
        gated = [c for c in rubric.criteria if c.gate is not None and grades[c.name][0] < c.gate]
        notes = [
            f"{c.name} {grades[c.name][0]}/{rubric.high}: {grades[c.name][1]}".rstrip(": ")
            for c in rubric.criteria
            if grades[c.name][0] < rubric.high
        ]
        if gated:
            value = 0.0
            notes.insert(0, "failed the minimum on " + ", ".join(c.name for c in gated))
        return Score(
            min(1.0, max(0.0, value)), feedback="; ".join(notes) or None, objectives=objectives
        )


def _make_rubric(
    criteria: str | Path | None,
    criteria_list: Sequence[Criterion | Mapping[str, object] | str] | None,
    scale: tuple[int, int],
) -> Rubric:
    low, high = scale
    if criteria_list is not None:
        items = tuple(_criterion(c, "criteria_list") for c in criteria_list)
        return Rubric(items, low, high)
    if isinstance(criteria, Path) or (
        isinstance(criteria, str) and "\n" not in criteria and Path(criteria).is_file()
    ):
        return load_rubric(criteria)
    if isinstance(criteria, str) and criteria.strip():
        return Rubric((Criterion("rubric", criteria.strip()),), low, high)
    return Rubric(DEFAULT_CRITERIA, low, high)


def judge_channel(client: ProviderClient, spec: ModelSpec) -> JudgeCall:
    """A JudgeCall that sends messages to ``spec`` through ``client`` as a "judge" call."""

    async def call(messages: Sequence[Mapping[str, str]]) -> str:
        return (await client.complete(spec, messages, role="judge")).text

    return call
