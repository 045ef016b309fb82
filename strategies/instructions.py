"""``instructions``: data-derived instruction edits; needs no reasoning model.

Small local models follow instructions but cannot write them, so the edits are read off the
train references. Candidates, most useful first (each is the base prompt plus added lines):

1. label set + output format: "The answer is one of: a, b, c." + "Answer with only the label,
   exactly as written, nothing else.";
2. (1) + brief per-label guidance: one short train input per label (when labels are few);
3. the output format alone;  4. the label set alone.

The label set is used when train has 2..``max_labels`` distinct references that repeat (on
average at least twice each). Numeric references give one candidate: "Answer with only the
number.". Tool-call and JSON references give the rules of ``reflex_strategies._rules``: a
format rule and (tool calls) a tool-selection rule, chosen and ordered by the failure kinds of
the base prompt's answers on the first ``batch_size`` train rows (the rows the run's preflight
already scored, so usually cached). No references, or free-text ones, give no candidates
(logged as ``no_candidates``). Each candidate is one iteration, selected on val by
``ctx.record_iteration``.

Model calls per iteration: ``len(val)``, or with train-minibatch screening (see
``reflex_strategies._common``) ``batch_size`` plus ``len(val)`` when the candidate survives.
Under ``--race`` the candidates are raced instead (``reflex_strategies._race``): no train
screening, a quarter of the val rows each first, the clearly worse dropped there.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from reflex.api import PHASES, BaseStrategy, Example, StrategyRegistrar, failure_counts, hookimpl

from ._common import join_sections, references, screening_batch, try_candidate
from ._race import Candidate, race_once
from ._rules import rule_candidates, structured_task

if TYPE_CHECKING:
    from reflex.api import StrategyContext

__all__ = [
    "InstructionsOptions",
    "InstructionsStrategy",
    "derived_instructions",
    "instruction_candidates",
    "register_strategies",
]

LABEL_FORMAT = "Answer with only the label, exactly as written, nothing else."
NUMBER_FORMAT = "Answer with only the number, nothing else."
_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


class InstructionsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_labels: int = Field(default=20, ge=2, description="most distinct references to list")
    max_candidates: int = Field(default=4, gt=0, description="candidates tried, best first")
    guidance_labels: int = Field(
        default=16, ge=0, description="add one example input per label up to this many"
    )
    max_example_chars: int = Field(default=120, gt=10, description="truncate guidance inputs")
    screen: bool | None = Field(
        default=None,
        description="screen on a train minibatch first; None: only when 2 * batch_size <= len(val)",
    )


def label_set(refs: Sequence[str], max_labels: int) -> list[str]:
    """The sorted distinct references when they look like a small, repeating label set."""
    counts = Counter(refs)
    if not 2 <= len(counts) <= max_labels or len(refs) < 2 * len(counts):
        return []
    return sorted(counts)


def _guidance(examples: Sequence[Example], labels: Sequence[str], max_chars: int) -> str:
    lines = []
    for label in labels:
        inputs = [
            " ".join(e.input.split())
            for e in examples
            if e.ideal is not None and e.ideal.strip() == label and e.input.strip()
        ]
        if not inputs:
            continue
        text = min(inputs, key=len)  # shortest first: brief guidance, first one on ties
        if len(text) > max_chars:
            text = text[: max_chars - 3].rstrip() + "..."
        lines.append(f'- {label}: e.g. "{text}"')
    return "Example input for each label:\n" + "\n".join(lines) if lines else ""


def instruction_candidates(
    examples: Sequence[Example],
    base: str,
    options: InstructionsOptions,
    counts: Mapping[str, int] | None = None,
) -> list[tuple[str, str]]:
    """``(edit, prompt)`` candidates derived from ``examples``' references, most useful first;
    ``counts``: the failure kinds seen (tool-call and JSON tasks, see ``_rules``)."""
    refs = references(examples)
    if not refs:
        return []
    if structured_task(examples) is not None:
        ruled = rule_candidates(
            examples,
            base,
            counts,
            max_functions=options.guidance_labels,
            max_chars=options.max_example_chars,
        )
        return ruled[: options.max_candidates]
    labels = label_set(refs, options.max_labels)
    if labels:
        label_line = "The answer is one of: " + ", ".join(labels) + "."
        edits = [("state the label set and the output format", [label_line, LABEL_FORMAT])]
        if len(labels) <= options.guidance_labels:
            guide = _guidance(examples, labels, options.max_example_chars)
            edits.append(
                (
                    "label set, output format and one example input per label",
                    [label_line, LABEL_FORMAT, guide],
                )
            )
        edits += [
            ("state the output format", [LABEL_FORMAT]),
            ("state the label set", [label_line]),
        ]
    elif all(_NUMBER.match(r) for r in refs):
        edits = [("state the numeric output format", [NUMBER_FORMAT])]
    else:
        return []
    out: list[tuple[str, str]] = []
    for edit, sections in edits:
        prompt = join_sections(base, *(s for s in sections if s and s not in base))
        if prompt != base.strip() and prompt not in (p for _, p in out):
            out.append((edit, prompt))
    return out[: options.max_candidates]


def derived_instructions(
    ctx: StrategyContext, base: str, options: InstructionsOptions
) -> list[tuple[str, str]]:
    """:func:`instruction_candidates` from ``ctx.train``, the failure kinds counted on the first
    ``batch_size`` train rows for a tool-call or JSON task (the preflight's rows: cached);
    logged as ``instructions_candidates``."""
    train = list(ctx.train)
    counts: dict[str, int] | None = None
    if structured_task(train) is not None and train:  # which rules the failures call for
        rows = train[: min(ctx.settings.batch_size, len(train))]
        counts = dict(failure_counts(ctx.evaluate(base, rows).samples))
    candidates = instruction_candidates(train, base, options, counts)
    ctx.log(
        "instructions_candidates",
        count=len(candidates),
        edits=[edit for edit, _ in candidates],
        **({"failures": counts} if counts is not None else {}),
    )
    return candidates


class InstructionsStrategy(BaseStrategy[InstructionsOptions]):
    name: ClassVar[str] = "instructions"
    Options: ClassVar[type[BaseModel]] = InstructionsOptions
    requires_reasoning_model: ClassVar[bool] = False
    derives_from_data: ClassVar[bool] = True

    def optimize(self, ctx: StrategyContext) -> None:
        state = ctx.state.setdefault(self.name, {})
        base = str(state.setdefault("base", ctx.best_prompt))
        candidates = derived_instructions(ctx, base, self.options)
        if not candidates:
            ctx.log(
                "no_candidates",
                phase=ctx.capability(PHASES).phase,
                reason="train references are missing, "
                "free text, or too many distinct values for a label set",
            )
            return
        raced = [Candidate(prompt, reasoning=f"instructions: {e}") for e, prompt in candidates]
        if race_once(ctx, state, raced):
            return
        batch = screening_batch(ctx, self.options.screen)
        for index, (edit, prompt) in enumerate(candidates):
            if index < int(state.get("tried", 0)):
                continue  # resumed: already recorded
            if ctx.should_stop:
                return
            try_candidate(
                ctx, prompt, ctx.best_prompt, batch=batch, reasoning=f"instructions: {edit}"
            )
            state["tried"] = index + 1


@hookimpl
def register_strategies(register: StrategyRegistrar) -> None:
    register(InstructionsStrategy)
