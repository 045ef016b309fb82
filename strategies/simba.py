"""``simba``: introspect where the incumbent is unstable, write rules from the contrast, add demos.

After DSPy's SIMBA (``dspy/teleprompt/simba.py``), in this engine's terms. Each step:

1. draws a seeded train minibatch (``batch_size``) and runs the incumbent on every row
   ``samples`` times at ``temperature`` (each sample decodes with its own seed, ``1000 * step +
   k``: seed and temperature are part of each call's cache key, so a resumed run replays the
   very same samples);
2. keeps the rows whose sampled scores vary (a better and a worse answer) or that never reach
   1.0, most varying first, up to ``max_rows``; a step without one is recorded as rejected
   without a reasoning call;
3. a *rule* candidate: the reasoning model is shown each kept row's better and worse answer
   (or its failures), with the metrics' feedback and failure kinds (``_rows.sample_row``), and
   writes rules (``simba.system`` / ``simba.contrast`` templates); they are appended to the
   prompt's ``Rules:`` section, and the whole candidate passes the same prompt-safety checks as
   a rewrite (``parse_proposal``: template, placeholders, tools section);
4. a *demo* candidate: the most varying row that some sample got fully right becomes a demo
   (its reference, else that successful output), appended to the ``Examples:`` section
   (at most ``max_demos``);
5. each candidate is screened on the minibatch (at the run's own decoding) and measured on val
   (``_common.try_candidate``: the ``--accept`` gate decides); an accepted one becomes the
   incumbent. Every candidate, and every step with nothing to introspect, is an iteration record.

Calls per step: ``samples * batch_size`` sampled calls per task model, then per candidate
``2 * batch_size`` (the incumbent's half cached) plus ``len(val)`` when it passes the screen.
Tested on the fake model and a fake reasoning endpoint only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from reflex.api import (
    BaseStrategy,
    Example,
    Outcome,
    ProposalError,
    Sample,
    StrategyRegistrar,
    ask,
    hookimpl,
    parse_proposal,
    render,
    system_prompt,
    tagged,
)

from ._common import join_sections, try_candidate
from ._rows import sample_row
from .fewshot import Demo, render_demos

if TYPE_CHECKING:
    from reflex.api import EvalSnapshot, StrategyContext

__all__ = [
    "RULES_HEADER",
    "RowSamples",
    "SimbaOptions",
    "SimbaStrategy",
    "introspection_rows",
    "register_strategies",
    "row_samples",
]

RULES_HEADER = "Rules:"


class SimbaOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    samples: int = Field(default=3, ge=2, description="sampled runs of the incumbent per row")
    temperature: float = Field(
        default=0.7, gt=0.0, le=2.0, description="temperature of the sampled runs"
    )
    max_rows: int = Field(default=4, gt=0, description="varying rows shown to the reasoning model")
    max_demos: int = Field(default=4, ge=0, description="most demos appended from successes")
    max_rules: int = Field(default=12, gt=0, description="most rules the prompt keeps")
    max_chars: int = Field(default=600, gt=20, description="truncate inputs/outputs shown")


@dataclass(frozen=True)
class RowSamples:
    """One (row, model)'s sampled answers, in sample order."""

    example_id: str
    samples: tuple[Sample, ...]

    @property
    def scores(self) -> list[float]:
        return [s.score if s.score is not None else 0.0 for s in self.samples]

    @property
    def spread(self) -> float:
        return max(self.scores) - min(self.scores)

    @property
    def best(self) -> Sample:
        return max(self.samples, key=lambda s: s.score if s.score is not None else 0.0)

    @property
    def worst(self) -> Sample:
        return min(self.samples, key=lambda s: s.score if s.score is not None else 0.0)


def row_samples(snapshots: Sequence[EvalSnapshot]) -> list[RowSamples]:
    """The sampled answers of each (row, model) across ``snapshots``, in first-seen order."""
    grouped: dict[tuple[str, str], list[Sample]] = {}
    for snapshot in snapshots:
        for sample in snapshot.samples:
            grouped.setdefault((sample.example_id, sample.model), []).append(sample)
    return [RowSamples(key[0], tuple(samples)) for key, samples in grouped.items()]


def introspection_rows(rows: Sequence[RowSamples], limit: int) -> list[RowSamples]:
    """Rows whose sampled scores vary or never reach 1.0: most varying first, then the lowest
    mean (a stable order: ties keep the minibatch order)."""
    kept = [r for r in rows if r.spread > 0 or max(r.scores) < 1.0]
    kept.sort(key=lambda r: (-r.spread, sum(r.scores) / len(r.scores)))
    return kept[:limit]


class SimbaStrategy(BaseStrategy[SimbaOptions]):
    name: ClassVar[str] = "simba"
    Options: ClassVar[type[BaseModel]] = SimbaOptions
    requires_reasoning_model: ClassVar[bool] = True

    def optimize(self, ctx: StrategyContext) -> None:
        base = str(ctx.state.get("base", ctx.best_prompt))
        rules: list[str] = list(ctx.state.get("rules", []))
        demos = [Demo(**d) for d in ctx.state.get("demos", [])]
        step = int(ctx.state.get("step", 0))
        train = list(ctx.train)
        while not ctx.should_stop:
            step += 1
            incumbent = _prompt(base, rules, demos)
            batch = ctx.rng.sample(train, min(ctx.settings.batch_size, len(train)))
            opts = self.options
            snapshots = [
                ctx.evaluate(incumbent, batch, sampling=(opts.temperature, 1000 * step + k))
                for k in range(opts.samples)
            ]
            rows = introspection_rows(row_samples(snapshots), opts.max_rows)
            ctx.log("simba_rows", step=step, rows=[r.example_id for r in rows])
            if not rows:
                nothing = "every sampled answer on this minibatch scored 1.0"
                ctx.record_iteration(incumbent, snapshots[0], Outcome.rejected(nothing))
            else:
                new_rules = self._rule_step(ctx, base, rules, demos, rows, batch)
                if new_rules is not None:
                    rules = new_rules
                new_demos = self._demo_step(ctx, base, rules, demos, rows, batch)
                if new_demos is not None:
                    demos = new_demos
            ctx.state.update(base=base, rules=rules, demos=[d.__dict__ for d in demos], step=step)

    def _rule_step(
        self,
        ctx: StrategyContext,
        base: str,
        rules: list[str],
        demos: list[Demo],
        rows: list[RowSamples],
        batch: list[Example],
    ) -> list[str] | None:
        """Ask for rules from the contrast; the new rule list when its candidate was accepted."""
        incumbent = _prompt(base, rules, demos)
        messages = [
            {"role": "system", "content": system_prompt(ctx, "simba.system")},
            {"role": "user", "content": self._brief(ctx, incumbent, rules, rows)},
        ]

        def parse(answer: str) -> tuple[list[str], str, str]:
            added = [r for r in _parse_rules(answer) if r not in rules]
            if not added:
                raise ProposalError("no new rules found: put them between <rules> and </rules>")
            kept = [*rules, *added][-self.options.max_rules :]
            candidate = _prompt(base, kept, demos)
            checked = parse_proposal(f"<prompt>{candidate}</prompt>", current=incumbent)
            return kept, checked.prompt, tagged(answer, "diagnosis") or answer.strip()

        answer, error = ask(ctx, "simba: rules from the contrast", messages, parse)
        if answer is None:
            ctx.record_iteration(incumbent, None, Outcome.failed(error))
            return None
        kept, candidate, diagnosis = answer
        record = try_candidate(ctx, candidate, incumbent, batch=batch, reasoning=diagnosis)
        return kept if record.is_best and record.rejected is None else None

    def _demo_step(
        self,
        ctx: StrategyContext,
        base: str,
        rules: list[str],
        demos: list[Demo],
        rows: list[RowSamples],
        batch: list[Example],
    ) -> list[Demo] | None:
        """Append a demo from a success; the new demo list when its candidate was accepted."""
        if len(demos) >= self.options.max_demos:
            return None
        shown = {d.example_id for d in demos}
        wins = [r for r in rows if max(r.scores) >= 1.0 and r.example_id not in shown]
        if not wins:
            return None
        row = wins[0]
        example = ctx.train.by_id(row.example_id)
        output = example.ideal.strip() if example.ideal and example.ideal.strip() else ""
        demo = Demo(example.id, example.input, output or row.best.output.strip(), True)
        incumbent = _prompt(base, rules, demos)
        candidate = _prompt(base, rules, [*demos, demo])
        note = f"demo from a successful sample of row {example.id}"
        record = try_candidate(
            ctx, candidate, incumbent, batch=batch, reasoning=note, exclude=frozenset({example.id})
        )
        return [*demos, demo] if record.is_best and record.rejected is None else None

    def _brief(
        self, ctx: StrategyContext, current: str, rules: list[str], rows: list[RowSamples]
    ) -> str:
        blocks = [self._contrast(ctx, n, row) for n, row in enumerate(rows, 1)]
        return render(
            "simba.contrast",
            ctx.settings.reasoning_templates,
            current=current,
            rules="\n".join(f"- {r}" for r in rules) or "- none yet",
            rows="\n\n".join(blocks),
        )

    def _contrast(self, ctx: StrategyContext, number: int, row: RowSamples) -> str:
        example = ctx.train.by_id(row.example_id)
        cut, field = self.options.max_chars, ctx.settings.feedback_field
        scores = ", ".join(f"{s:.2f}" for s in row.scores)
        head = f"Example {number} (sampled scores {scores}):"
        worse = sample_row(example, row.worst, cut, feedback_field=field)
        if row.spread == 0:
            return f"{head}\nevery sample failed, e.g.:\n{worse}"
        better = sample_row(example, row.best, cut, feedback_field=field)
        return f"{head}\nbetter answer:\n{better}\nworse answer:\n{worse}"


def _parse_rules(answer: str) -> list[str]:
    """The ``<rules>`` lines of ``answer``, bullets stripped, empty lines dropped."""
    text = tagged(answer, "rules") or ""
    lines = (line.strip().lstrip("-*•").strip() for line in text.splitlines())
    return [line for line in lines if line]


def _prompt(base: str, rules: Sequence[str], demos: list[Demo]) -> str:
    """The base prompt, then its ``Rules:`` section, then its ``Examples:`` section."""
    section = RULES_HEADER + "\n" + "\n".join(f"- {r}" for r in rules) if rules else ""
    return join_sections(base, section, render_demos(demos) if demos else "")


@hookimpl
def register_strategies(register: StrategyRegistrar) -> None:
    register(SimbaStrategy)
