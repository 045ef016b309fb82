"""Run configuration: every setting that shapes a run, validated, JSON-serialisable, no secrets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from reflex.channel import ChannelConfig
from reflex.data.tool_schemas import check_response_format, check_tool_choice, check_tools
from reflex.errors import ConfigurationError
from reflex.limits import BudgetConfig, BudgetPreset
from reflex.redact import redact_url
from reflex.scoring import ConfigurableMetric, MetricSpec, metric_specs

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "ACCEPT_ALPHA",
    "BudgetConfig",
    "BudgetPreset",
    "ChannelConfig",
    "ConfigurableMetric",
    "DEFAULT_ITERATIONS",
    "MetricSpec",
    "RunConfig",
    "BaseRunConfig",
    "SettingsBuilder",
    "default",
    "metric_specs",
    "parse_accept",
    "default_strategy",
    "redact_url",
    "validation_message",
]


def default_strategy(reasoning_model: str | None) -> str:
    """The strategy of a run that names none: ``iterative`` when a reasoning model is given,
    else ``auto``, which then runs reasoning-free (instructions, then few-shot demos)."""
    return "iterative" if reasoning_model else "auto"


#: Candidates a run tries when ``max_iterations`` is not set and no call budget sizes the search.
DEFAULT_ITERATIONS = 5

ACCEPT_ALPHA = 0.1  # ``significant`` without a level: a one-sided paired test at 10%


def parse_accept(text: str) -> tuple[str, float]:
    """``significant[:ALPHA]``, ``margin:M`` or ``any`` as ``(kind, value)`` (the test's level,
    the margin in score units, 0 for any); ValueError naming the value and the forms."""
    kind, _, arg = text.strip().partition(":")
    try:
        value = float(arg) if arg else None
    except ValueError:
        value = float("nan")
    forms = "write significant, significant:0.1, margin:0.02 or any"
    if kind == "any" and value is None:
        return "any", 0.0
    if kind == "significant" and (value is None or 0.0 < value < 1.0):
        return "significant", ACCEPT_ALPHA if value is None else value
    if kind == "margin" and value is not None and 0.0 <= value < 1.0:
        return "margin", value
    raise ValueError(f"accept={text!r} is not a rule: {forms}")


class BaseRunConfig(ChannelConfig):
    """Every run setting with its default and constraints; a :class:`RunConfig` without models.
    The model channel's settings (models, endpoints, concurrency, cache, prices) are
    :class:`~reflex.channel.ChannelConfig`'s fields; the rest are written here.

    The builder validates each call against this as it is made, so a bad value is reported
    where it was set, also before any task model is added.
    """

    model_config = ConfigDict(extra="forbid")

    source_model: str | None = Field(
        default=None,
        description="Model the prompt was written for: adds migration guidance for the task model.",
    )
    reasoning_templates: dict[str, str] = Field(  # see reflex.judging.reasoning
        default_factory=dict,
        description="Reasoning-prompt templates overridden for this run, by name.",
    )
    feedback_field: str | None = Field(
        default=None,
        min_length=1,
        description="A dataset column shown to the reasoning model as each train row's "
        "feedback (e.g. a reviewer's critique); never sent to the task model.",
    )
    metrics: list[str] = Field(default_factory=list)
    metric_weights: dict[str, float] = Field(default_factory=dict)
    # How to rebuild the metrics that take options (e.g. llm_judge's model and rubric), so
    # ``check`` and ``export`` score exactly as the run did; option-less metrics rebuild by name.
    metric_specs: list[MetricSpec] = Field(default_factory=list)
    guards: dict[str, float] = Field(  # metric -> tolerance
        default_factory=dict,
        description="Metrics a candidate may not lower on val by more than their tolerance, "
        "against the starting prompt.",
    )
    slice_by: list[str] = Field(
        default_factory=list,
        description="Metadata keys: the test scores are also reported per value of each.",
    )
    # Chat templates (reflex.data.templates).
    variables: dict[str, str] = Field(  # variable -> row field
        default_factory=dict,
        description="Chat template: the row field that fills a {{variable}} (default: the "
        "field of the variable's name).",
    )
    rewrite_messages: list[str] | None = Field(
        default=None,
        description="Chat template: the messages strategies may rewrite (system, user, user_2, "
        "...). Default: all.",
    )
    # "" (none named) is resolved by the _strategy validator below.
    strategy: str = Field(
        default="",
        description=f"Strategy name. Default: {default_strategy('given')} with a reasoning "
        f"model, else {default_strategy(None)}.",
    )
    strategy_options: dict[str, Any] = Field(
        default_factory=dict, description="The strategy's options, by name."
    )
    # None: resolved by the engine once the splits are known (reflex.run.stopping).
    max_iterations: int | None = Field(
        default=None,
        ge=0,
        description=f"Candidates to try. Default: {DEFAULT_ITERATIONS}, or under a task-call "
        f"budget as many as it pays a val pass for (at least {DEFAULT_ITERATIONS}).",
    )
    score_threshold: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Stop once the best val score reaches this."
    )
    train_split: float = Field(default=0.6, gt=0.0, lt=1.0)
    val_split: float = Field(
        default=0.2, ge=0.0, lt=1.0, description="Fraction of rows held out for validation."
    )
    group_key: str | None = Field(
        default=None, description="Metadata key whose rows stay in one split."
    )
    seed: int = 0
    batch_size: int = Field(default=8, gt=0, description="Train rows per iteration (minibatch).")
    early_stopping_patience: int | None = Field(default=3, gt=0)
    accept: str = Field(
        default="any",
        description="When a candidate replaces the best prompt: significant[:ALPHA] (better on "
        "the val rows by a one-sided paired sign-flip test, level 0.1, and the winner "
        "corrected for best-of-many), margin:M (a mean val gain of at least M) or any (any "
        "higher val score).",
    )
    race: bool = Field(
        default=True,
        description="Race a round's candidates on growing val minibatches (1/4, 1/2, all of "
        "the val rows, the same rows for each) and drop the clearly worse early (fewshot and "
        "auto's demo step draw several demo sets and race them).",
    )
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    run_dir: str = ".reflex"
    shared_run_dir: bool = Field(  # existing folders keep their mode
        default=False,
        description="Make the folders a run creates group-readable (0750, files 0640), for a "
        "team's shared run directory; by default they are private (0700, files 0600): they "
        "hold prompts, dataset rows and model answers.",
    )
    prompt_mode: Literal["replace", "prepend"] = "replace"
    # Tools offered with every request (OpenAI function schemas; a row's own ``tools`` replace
    # them), the tool choice (auto, required, none, or a function's name) and the answer format
    # asked for (json_object / json_schema): checked by reflex.data.tool_schemas, sent on every
    # transport, part of the cache key.
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = Field(
        default=None,
        description="Whether the task model must call a tool, may, must not, or must call NAME.",
    )
    response_format: dict[str, Any] | None = None
    # Issue 31's guards (reflex.data.tool_text, reflex.run.screening): the tools' function and
    # parameter descriptions as optimizable prompt text; a minibatch check of answer formats.
    optimize_tool_descriptions: bool = Field(
        default=False,
        description="Let strategies rewrite the tools' function and parameter descriptions "
        "(never names, types, enums or required lists).",
    )
    format_guard: bool = Field(
        default=True,
        description="Reject, before its val evaluation, a candidate whose answers break the "
        "JSON schema or the tool-call format more often than the incumbent's on the minibatch, "
        "and, at 0 calls, one that no longer names a schema field the initial prompt named.",
    )
    max_prompt_tokens: int | None = Field(
        default=None,
        gt=0,
        description="Refuse, at 0 calls, a candidate prompt longer than this many tokens "
        "(demos included; counted in cl100k_base), so a longer prompt never wins.",
    )
    prompt_token_cost: float = Field(
        default=0.0,
        ge=0.0,
        description="Val score a candidate must gain, beyond --accept, per 1,000 prompt tokens "
        "it adds over the best prompt (0: length is free; 0.05: 400 more must buy +0.02).",
    )
    # Pipeline mode (reflex.data.pipeline): where the function came from and its source hash (a
    # changed pipeline cannot resume a run), the per-example timeout, and the metrics that
    # score the whole trace instead of the final output.
    pipeline: str | None = None
    pipeline_sha256: str | None = None
    pipeline_timeout: float = Field(
        default=60.0,
        gt=0,
        description="Seconds per example; a pipeline still running then is scored as failed.",
    )
    trace_metrics: list[str] = Field(
        default_factory=list,
        description="Metrics that score the whole pipeline trace (JSON with output and steps) "
        "instead of the final output.",
    )
    allow_degenerate_seed: bool = Field(
        default=False,
        description="Run even if the starting prompt scores the worst value on every row.",
    )
    # Leakage checks on every candidate (reflex.checks.leakage); strict rejects flagged candidates.
    strict_leakage: bool = Field(
        default=False,
        description="Reject a candidate flagged for leakage (8+ words copied from a val/test "
        "example, or an implausible val gain) instead of only recording the flag.",
    )
    leakage_min_words: int = Field(default=8, ge=2)
    leakage_gain_margin: float = Field(default=0.15, gt=0.0, le=1.0)
    leakage_gain_ratio: float = Field(default=3.0, ge=1.0)
    overfit_gap: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="Warn (overfit) when the best val score is more than this above the final "
        "test score.",
    )
    dataset_name: str = ""
    dataset_size: int = 0
    # The registry URI the starting prompt was read from, pinned to its version ("prompts:/cat/3"
    # for prompts:/cat@production); "" for a text or a file. The MLflow adapter registers the
    # winner as a new version of that prompt.
    prompt_source: str = ""
    run_id: str = ""
    resumed: bool = False

    @field_validator("accept")
    @classmethod
    def _accept(cls, value: str) -> str:
        kind, level = parse_accept(value)
        return kind if kind == "any" else f"{kind}:{level:g}" if ":" in value else kind

    @model_validator(mode="after")
    def _request_options(self) -> BaseRunConfig:
        if self.tools is not None:
            self.tools = check_tools(self.tools, "tools")
        if self.response_format is not None:
            self.response_format = check_response_format(self.response_format, "response_format")
        self.tool_choice = check_tool_choice(self.tool_choice, self.tools, "tool_choice")
        return self

    @model_validator(mode="after")
    def _strategy(self) -> BaseRunConfig:
        if not self.strategy:
            self.strategy = default_strategy(self.reasoning_model)
        return self

    @model_validator(mode="after")
    def _splits(self) -> BaseRunConfig:
        if self.train_split + self.val_split >= 1.0:
            raise ConfigurationError(
                f"train split {self.train_split} + val split {self.val_split} leaves no test "
                "split: make them sum to less than 1 (e.g. 0.6 and 0.2)"
            )
        return self

    @property
    def test_split(self) -> float:
        return round(1.0 - self.train_split - self.val_split, 10)


class RunConfig(BaseRunConfig):
    """Everything the engine needs besides the dataset, the metric objects and the prompt."""

    models: list[str] = Field(min_length=1)


def default(name: str) -> Any:
    """The default of run setting ``name``, written once: in :class:`BaseRunConfig`'s field (read
    by the CLI, the builder and lower layers' standalone defaults, ``split_dataset(train=...)``)."""
    return BaseRunConfig.model_fields[name].get_default(call_default_factory=True)


def validation_message(exc: ValidationError) -> str:
    """One line from a pydantic error: the field, the bad value and what is expected."""
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "value"
    return f"{field}={first.get('input')!r}: {first['msg']}"


class SettingsBuilder:
    """The settings a builder holds: one validated :class:`BaseRunConfig`, each setter replacing
    fields of it (``_set``). Until a strategy is named it follows the reasoning model
    (:func:`default_strategy`). ``PromptOptimizer`` is built on it, with its data side
    (``reflex.data.run_data``) and its model side (``reflex.models.run_models``)."""

    def __init__(self) -> None:
        self._config = BaseRunConfig()
        self._strategy_named = False

    def _set(self, **values: Any) -> Self:
        """Replace these fields of the settings; the whole is validated again (cross-checks)."""
        fields = {**dict(self._config), **values}  # dict(): the values, not their redacted dump
        if not self._strategy_named and "strategy" not in values:
            fields["strategy"] = ""  # re-derived from the reasoning model as set now
        try:
            self._config = BaseRunConfig.model_validate(fields)
        except ValidationError as exc:
            raise ConfigurationError(validation_message(exc)) from None
        if "strategy" in values:
            self._strategy_named = bool(values["strategy"])
        return self
