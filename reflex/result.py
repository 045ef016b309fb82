"""Result records. Attribute names here are a public contract (see DESIGN.md); keep them.

The verdicts these records hold (``Outcome``, ``PairOutcome``, ``StopReason``, ``RunEnd``) live
in :mod:`reflex.outcomes` and are re-exported here, so ``from reflex.result import RunEnd``
works as it always has.

Every record round-trips through ``to_dict`` / ``from_dict``; ``OptimizationResult.to_dict``
is what ``--results-json`` and ``result.json`` hold (with ``schema_version``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from enum import Enum
from typing import Any

from reflex.outcomes import Outcome, PairOutcome, RunEnd, StopReason

__all__ = [
    "SCHEMA_VERSION",
    "VERSION",
    "EvalSnapshot",
    "Example",
    "IterationRecord",
    "OptimizationResult",
    "Outcome",
    "PairOutcome",
    "RunEnd",
    "Sample",
    "StopReason",
    "best_val_of",
]

SCHEMA_VERSION = 1
# The package version every record is stamped with (``reflex.__version__``).
VERSION = "0.1.0"


@dataclass(frozen=True)
class Example:
    """One dataset row.

    ``messages`` is the conversation sent to the task model (without the optimized prompt);
    ``ideal`` is the reference answer or None when the row has none; ``split`` is the split the
    file asked for ("train" / "val" / "test") or None to let the seeded splitter decide. A row
    bound to a chat template carries ``variables``; without an input of its own its one user
    message is the variables as a JSON line (what metrics and reasoning prompts show as input).
    """

    id: str
    messages: tuple[Mapping[str, Any], ...]
    ideal: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    split: str | None = None
    # OpenAI function schemas offered with this row's request (``{"type": "function",
    # "function": {...}}`` each); empty: the run's tools, if any (see reflex.toolcalls).
    tools: tuple[Mapping[str, Any], ...] = ()
    # A chat template's variables filled from this row's fields (name -> text); empty when the
    # prompt is no template (see reflex.data.templates).
    variables: Mapping[str, str] = field(default_factory=dict)

    @property
    def input(self) -> str:
        """The last user message: what most metrics and reasoning prompts show as 'input'."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return str(message.get("content") or "")
        return str(self.messages[-1].get("content") or "") if self.messages else ""


@dataclass(frozen=True)
class Sample:
    """One (example, model) evaluation: output, combined score, per-metric scores and feedback.

    ``score`` is None when no metric applied to the row (e.g. no reference) or it errored.
    ``trace``: in pipeline mode, the pipeline's named steps (``{"name", "input", "output"}``
    each) in order; None outside pipeline mode. ``latency_ms`` (the task call's wall time, a
    cache hit's too; None in pipeline mode), ``prompt_tokens`` and ``completion_tokens`` (the
    original call's usage, also on a cache hit) describe the call; equality ignores them.
    """

    example_id: str
    model: str
    output: str
    score: float | None
    scores: dict[str, float] = field(default_factory=dict)
    feedback: dict[str, str] = field(default_factory=dict)
    objectives: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    cached: bool = False
    failed_metrics: list[str] = field(default_factory=list)
    trace: list[dict[str, Any]] | None = None
    latency_ms: float | None = field(default=None, compare=False)
    prompt_tokens: int | None = field(default=None, compare=False)
    completion_tokens: int | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        """Pairing key: example id, plus the model when several task models are evaluated."""
        return f"{self.example_id}@{self.model}"


_SAMPLE_FIELDS = tuple(f.name for f in fields(Sample))
_ATOMS = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any) -> Any:
    """``dataclasses.asdict``'s copy of a JSON-like value (exact dicts, lists and atoms only)."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {_plain(k): _plain(v) for k, v in value.items()}
    if kind is list:
        return [_plain(v) for v in value]
    raise TypeError(kind)


def _sample_dict(sample: Sample) -> dict[str, Any]:
    """``asdict(sample)``, ~5x faster (a run's end writes ~1,000 of them into result.json)."""
    try:
        return {name: _plain(getattr(sample, name)) for name in _SAMPLE_FIELDS}
    except TypeError:  # a value asdict would copy otherwise (a tuple, a subclass): asdict's
        return asdict(sample)


@dataclass(frozen=True)
class EvalSnapshot:
    """A prompt measured on one split. ``mean_score`` averages the scored samples.

    ``n_skipped``: rows a reference metric skipped (no reference), per metric. ``n_failed``:
    rows a metric could not score (e.g. failed judgements), per metric; they are excluded.
    ``model_graded``: a judge model scored this snapshot.
    """

    system_prompt: str
    split: str
    mean_score: float
    scores_by_metric: dict[str, float]
    samples: tuple[Sample, ...] = ()
    n_errors: int = 0
    n_skipped: dict[str, int] = field(default_factory=dict)
    n_failed: dict[str, int] = field(default_factory=dict)
    model_graded: bool = False

    def per_example(self) -> dict[str, float]:
        """Scores keyed for pairing (example id @ model), scored samples only."""
        return {s.key: s.score for s in self.samples if s.score is not None}

    def to_dict(self) -> dict[str, Any]:
        data = asdict(replace(self, samples=()))  # the samples once, as a list (not a tuple)
        data["samples"] = [_sample_dict(s) for s in self.samples]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalSnapshot:
        values = {k: v for k, v in data.items() if k in _names(cls)}
        values["samples"] = tuple(Sample(**s) for s in data.get("samples", ()))
        return cls(**values)


@dataclass(frozen=True)
class IterationRecord:
    """One strategy iteration: train (or minibatch) score, val score, and what was tried.

    ``score`` is the candidate's train score, ``val_score`` its validation score (None without a
    val split or when the iteration failed). ``change`` is the train-score change against the
    prompt it was derived from. ``failed`` is an error; ``rejected`` a reason the candidate was
    not eligible (screened out before val, or a guard metric regressed). ``calls``/``tokens``/
    ``cost`` are run totals so far (``cost`` sums the priced calls; ``cost_unknown`` counts the
    paid calls that had no price, so a cost of 0 with all calls unpriced is unknown, not free;
    see :func:`reflex.models.usage.cost_text`). ``components``: the candidate's named prompt
    components when the strategy edits components (see :mod:`reflex.data.prompts`), else None.
    ``leakage``: the candidate's leakage flags (:mod:`reflex.checks.leakage`), each a
    ``LeakageFlag.to_dict()``. ``lineage``: the candidates (JSON objects; gepa's: ``id``,
    ``parents``, ``changed``, ``kind``, ``iteration``, ``val_score``, ``minibatch``) this
    iteration added to a search's population; ``OptimizationResult.lineage`` is all, in order.
    ``evidence``: the acceptance gate's evidence for a candidate measured on val (its rule, the
    incumbent, paired rows, mean difference, one-sided p, passed; a label task's check against
    the constant answer; see :mod:`reflex.run.acceptance`), None when it was not measured.
    ``race``: a raced candidate's rungs (``reflex_strategies._race``): ``rung`` (the last it was
    scored on, 1-based), ``rungs``, ``rows`` (that rung's val row ids, shared by every
    candidate of the race), ``score`` (its mean on them), ``leader`` / ``leader_score``,
    ``p`` and ``dropped``; None when the candidate was not raced. A dropped candidate is
    ``rejected`` and has no ``val_score``: a partial score never makes a best prompt.
    """

    iteration: int
    score: float | None
    val_score: float | None
    scores_by_metric: dict[str, float]
    system_prompt: str
    reasoning: str = ""
    val_scores_by_metric: dict[str, float] = field(default_factory=dict)
    accepted: bool = False
    change: float | None = None
    failed: str | None = None
    rejected: str | None = None
    is_best: bool = False
    phase: str = ""
    calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    elapsed_s: float = 0.0
    components: dict[str, str] | None = None
    leakage: list[dict[str, Any]] = field(default_factory=list)
    cost_unknown: int = 0
    lineage: list[dict[str, Any]] = field(default_factory=list)
    evidence: dict[str, Any] | None = None
    race: dict[str, Any] | None = None

    @property
    def outcome(self) -> Outcome:
        """The verdict: failed, rejected, accepted, or declined (measured, not adopted)."""
        if self.failed is not None:
            return Outcome.failed(self.failed)
        if self.rejected is not None:
            return Outcome.rejected(self.rejected)
        return Outcome.accepted() if self.accepted else Outcome.declined()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IterationRecord:
        return cls(**{k: v for k, v in data.items() if k in _names(cls)})


@dataclass
class OptimizationResult:
    """The outcome of a run. ``best_prompt`` is the prompt whose ``final`` test score is reported.

    ``best_score`` is the best train score seen during optimization (the highest
    ``IterationRecord.score``; None when no iteration was scored). ``best_score_val`` is
    ``best_prompt``'s validation score (the selection criterion; its train score when the run has
    no val split). ``baseline`` and ``final`` are measured on the test split.
    ``slices``: per-group test scores by metadata key, baseline vs final (see
    :func:`reflex.run.evaluate.slice_scores`); empty unless slices were asked for.
    ``best_components``: ``best_prompt`` as named components when known (None when a strategy
    edited the assembled text). ``lineage``: candidates of a search strategy (e.g. ``gepa``)
    with their parents, the component each changed and their scores; empty otherwise.
    ``failed_proposals``: reasoning answers that stayed unusable after their retry, each with
    ``iteration``, ``phase``, ``purpose``, ``error`` and ``attempts``.
    ``warnings``: ``{"kind", "message"}`` a reviewer should read (model-graded metric, overfit,
    no validation split; see :func:`reflex.checks.audit.run_warnings`). ``environment``: versions of
    aevyra-reflex, Python and each plugin, and the dataset file's path and sha256.
    ``prompt_versions``: the initial and every accepted prompt, content-addressed, with
    provenance and a diff against its parent (see :mod:`reflex.checks.versions`).
    ``stop``: why the strategy's loop ended, as a :class:`StopReason` (``stop_reason`` says it
    in words); ``end_state``: how the run ended, as a :class:`RunEnd`. Both are None until set.
    ``selection``: the winner corrected for best-of-many on val (:mod:`reflex.run.acceptance`);
    ``label_check``: on a label task, the winner's test answers against the constant answer
    and the label prior (:mod:`reflex.checks.trivial`); None otherwise.
    """

    best_prompt: str
    best_score: float | None
    baseline: EvalSnapshot | None
    final: EvalSnapshot | None
    iterations: list[IterationRecord] = field(default_factory=list)
    initial_prompt: str = ""
    p_value: float | None = None
    significance: dict[str, Any] | None = None
    stop_reason: str = ""
    completed: bool = False
    run_id: str | None = None
    run_dir: str | None = None
    strategy: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    split_sizes: dict[str, int] = field(default_factory=dict)
    phase_history: list[dict[str, Any]] = field(default_factory=list)
    elapsed_s: float = 0.0
    slices: dict[str, Any] = field(default_factory=dict)
    best_components: dict[str, str] | None = None
    lineage: list[dict[str, Any]] = field(default_factory=list)
    failed_proposals: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    prompt_versions: list[dict[str, Any]] = field(default_factory=list)
    stop: StopReason | None = None
    end_state: RunEnd | None = None
    best_score_val: float | None = None
    selection: dict[str, Any] | None = None
    label_check: dict[str, Any] | None = None

    def __repr__(self) -> str:
        """The outcome at a glance: end state, test scores, stop reason and every warning
        (the samples and iterations are in the fields; ``to_dict()`` has everything)."""
        base = self.baseline.mean_score if self.baseline is not None else None
        final = self.final.mean_score if self.final is not None else None
        warnings = [f"{w.get('kind')}: {w.get('message')}" for w in self.warnings]
        end = self.end_state.value if self.end_state is not None else None
        return (
            f"OptimizationResult(end_state={end!r}, baseline={_short(base)}, "
            f"final={_short(final)}, best_score={_short(self.best_score)}, "
            f"iterations={len(self.iterations)}, stop_reason={self.stop_reason!r}, "
            f"warnings={warnings!r}, run_dir={self.run_dir!r})"
        )

    @property
    def model_graded(self) -> bool:
        """True when a judge model scored the reported numbers (baseline or final)."""
        return any(s is not None and s.model_graded for s in (self.baseline, self.final))

    @property
    def improvement(self) -> float | None:
        if self.baseline is None or self.final is None:
            return None
        return self.final.mean_score - self.baseline.mean_score

    @property
    def improvement_pct(self) -> float | None:
        gain = self.improvement
        if gain is None or self.baseline is None or self.baseline.mean_score == 0:
            return None
        return 100.0 * gain / self.baseline.mean_score

    @property
    def improvement_pct_note(self) -> str | None:
        """Why ``improvement_pct`` is None (e.g. a baseline of 0), or None when it is defined."""
        if self.baseline is None or self.final is None:
            return "no baseline or final test score (the run did not complete)"
        if self.baseline.mean_score == 0:
            return "the baseline test score is 0: a percentage of 0 is undefined"
        return None

    @property
    def score_trajectory(self) -> list[float | None]:
        return [record.score for record in self.iterations]

    @property
    def val_trajectory(self) -> list[float | None]:
        return [record.val_score for record in self.iterations]

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, EvalSnapshot):
                value = value.to_dict()
            elif f.name == "iterations":
                value = [record.to_dict() for record in value]
            elif isinstance(value, Enum):
                value = value.value
            data[f.name] = value
        data.update(
            improvement=self.improvement,
            improvement_pct=self.improvement_pct,
            improvement_pct_note=self.improvement_pct_note,
            score_trajectory=self.score_trajectory,
            val_trajectory=self.val_trajectory,
            model_graded=self.model_graded,
        )
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OptimizationResult:
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ValueError(f"result schema_version {version!r} is not {SCHEMA_VERSION}")
        values = {k: v for k, v in data.items() if k in _names(cls)}
        for name in ("baseline", "final"):
            if values.get(name) is not None:
                values[name] = EvalSnapshot.from_dict(values[name])
        values["iterations"] = [IterationRecord.from_dict(r) for r in values.get("iterations", [])]
        # Records written before ``stop`` / ``end_state`` existed lack them: leave them None.
        values["stop"] = StopReason(values["stop"]) if values.get("stop") else None
        values["end_state"] = RunEnd(values["end_state"]) if values.get("end_state") else None
        return cls(**values)


def best_val_of(data: Mapping[str, Any]) -> float | None:
    """The best prompt's val score from a result JSON; records written before ``best_score_val``
    existed held it in ``best_score`` (which now means the best train score seen)."""
    value = data["best_score_val"] if "best_score_val" in data else data.get("best_score")
    return float(value) if isinstance(value, int | float) else None


def _short(value: float | None) -> str:
    return "None" if value is None else f"{value:.3f}"


def _names(cls: type) -> set[str]:
    return {f.name for f in fields(cls)}
