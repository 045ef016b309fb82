"""``pdo``: prompt duelling: a pool of candidates compared head to head on the user's metric.

1. Pool: the best prompt so far, ``generated`` alternatives from the reasoning model (template
   ``pdo.pool``; skipped without one) and layout variants (``reflex_strategies._layout``) up to
   ``pool_size``.
2. Each round runs ``duels_per_round`` duels. A pair is picked by double Thompson sampling (an
   un-duelled mutant is first paired with the champion instead); both prompts are scored on the
   same ``duel_rows`` seeded train rows with ``ctx.evaluate``, and each row goes to the prompt
   the **user's metrics** score higher (a tie is half a win each). Only when the run is
   label-free (no train row has a reference) and one metric is a judge (the ``JUDGING``
   capability) does a *pairwise* judge decide each row instead (``judge_pairs``): asked
   in both orders against position bias, a row it cannot judge after a retry is a logged tie.
3. Rankings: Copeland, Borda, Elo and average win rate (``_ranking``), fused with weights
   learned by multiplicative updates: a method gains weight when it predicted a duel's winner.
4. Every ``mutate_every`` rounds the ``mutate_top`` best prompts each get a mutant: a rewrite
   by the reasoning model from the rows it lost (template ``pdo.mutate``), or without one the
   next untried layout. Pruning keeps the pool at ``max_pool`` by dropping the lowest-ranked
   prompts that have duelled; the champion and un-duelled prompts (mutants included) stay.
5. Each round is one iteration: the champion (best fused rank) is scored with the metric on a
   fixed seeded train batch of ``batch_size`` rows, then on val by ``ctx.record_iteration``.
   The iteration's score is that metric score, never a win rate.

Model calls per round: ``2 * duels_per_round * duel_rows`` (fewer on cache hits), plus
``batch_size`` and ``len(val)`` for a new champion; pairwise duels add ``2 * duel_rows`` judge
calls per duel (more on retries). Deterministic given the seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from reflex.api import (
    JUDGING,
    PHASES,
    BaseStrategy,
    Example,
    Proposal,
    Sample,
    StrategyRegistrar,
    ask,
    hookimpl,
    parse_prompts,
    parse_proposal,
    render,
    system_prompt,
)

from . import _ranking as rk
from ._layout import TRANSFORMS, apply_transform
from ._rows import evidence_lines, pipeline_notes

if TYPE_CHECKING:
    from reflex.api import StrategyContext

__all__ = ["PDOOptions", "PDOStrategy", "Pool", "register_strategies"]

LOSS_CHARS = 300  # each text of a lost row shown to the reasoning model (pipeline steps too)


class PDOOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pool_size: int = Field(default=5, ge=2, description="initial candidates, the base included")
    generated: int = Field(default=3, ge=0, description="of which written by the reasoning model")
    duels_per_round: int = Field(default=2, gt=0)
    duel_rows: int | None = Field(default=None, gt=0, description="rows per duel (batch_size)")
    mutate_every: int = Field(default=2, ge=0, description="rounds between mutations; 0: never")
    mutate_top: int = Field(default=1, gt=0, description="top prompts mutated each time")
    max_pool: int = Field(default=8, ge=2, description="pool size kept by pruning")
    eta: float = Field(default=0.5, gt=0.0, description="learning rate of the fusion weights")
    judge_duels: bool = Field(
        default=True, description="label-free runs with a judge: a pairwise judge decides rows"
    )

    @model_validator(mode="after")
    def _sizes(self) -> PDOOptions:
        if self.max_pool < self.pool_size:
            raise ValueError(f"max_pool ({self.max_pool}) must be >= pool_size ({self.pool_size})")
        return self


@dataclass
class Entry:
    prompt: str
    origin: str
    mutant: bool = False
    alive: bool = True
    duels: int = 0
    # (input, own output, winner's output, own pipeline failure and trace: "" without a pipeline)
    losses: list[tuple[str, str, str, str]] = field(default_factory=list)


@dataclass
class Pool:
    """Candidates, the win matrix, the duel log and the fusion weights."""

    entries: list[Entry] = field(default_factory=list)
    wins: rk.Matrix = field(default_factory=list)
    duels: list[tuple[int, int, float]] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=lambda: dict.fromkeys(rk.METHODS, 0.25))

    def add(self, prompt: str, origin: str, *, mutant: bool = False) -> bool:
        if any(e.prompt.strip() == prompt.strip() for e in self.entries) or not prompt.strip():
            return False
        self.entries.append(Entry(prompt, origin, mutant=mutant))
        for row in self.wins:
            row.append(0.0)
        self.wins.append([0.0] * len(self.entries))
        return True

    @property
    def alive(self) -> list[int]:
        return [i for i, e in enumerate(self.entries) if e.alive]

    def ranks(self) -> dict[str, list[float]]:
        return rk.rankings(self.wins, self.duels, self.alive)

    def fused(self) -> list[float]:
        return rk.fuse(self.ranks(), self.weights)

    def champion(self) -> int:
        fused = self.fused()
        return max(self.alive, key=lambda i: (fused[i], -i))

    def record(self, i: int, j: int, outcomes: list[float], eta: float) -> float:
        """Add a duel's per-row outcomes (1: ``i`` won, 0: ``j`` won, 0.5: tie)."""
        share = sum(outcomes) / len(outcomes) if outcomes else 0.5
        self.weights = rk.update_weights(self.weights, self.ranks(), i, j, share, eta)
        self.wins[i][j] += sum(outcomes)
        self.wins[j][i] += len(outcomes) - sum(outcomes)
        self.duels.append((i, j, share))
        self.entries[i].duels += 1
        self.entries[j].duels += 1
        return share

    def prune(self, max_pool: int) -> list[int]:
        """Drop the lowest-ranked duelled prompts until ``max_pool`` remain; never the champion."""
        dropped: list[int] = []
        champion = self.champion()
        while len(self.alive) > max_pool:
            fused = self.fused()
            removable = [i for i in self.alive if i != champion and self.entries[i].duels > 0]
            if not removable:
                break
            worst = min(removable, key=lambda i: (fused[i], -i))
            self.entries[worst].alive = False
            dropped.append(worst)
        return dropped


class PDOStrategy(BaseStrategy[PDOOptions]):
    name: ClassVar[str] = "pdo"
    Options: ClassVar[type[BaseModel]] = PDOOptions
    requires_reasoning_model: ClassVar[bool] = False
    auto_eligible: ClassVar[bool] = True

    def __init__(self, options: PDOOptions) -> None:
        super().__init__(options)
        self.notes: list[str] = []

    def optimize(self, ctx: StrategyContext) -> None:
        train = list(ctx.train)
        pool = self._seed_pool(ctx)
        if len(pool.alive) < 2 or not train:
            phase = ctx.capability(PHASES).phase
            ctx.log("no_candidates", phase=phase, reason="fewer than two distinct prompts")
            return
        report_rows = ctx.rng.sample(train, min(ctx.settings.batch_size, len(train)))
        size = min(self.options.duel_rows or ctx.settings.batch_size, len(train))
        rounds = 0
        while not ctx.should_stop:
            rounds += 1
            for _ in range(self.options.duels_per_round):
                self._duel(ctx, pool, ctx.rng.sample(train, size))
            every = self.options.mutate_every
            if every and rounds % every == 0:
                self._mutate(ctx, pool)
            dropped = pool.prune(self.options.max_pool)
            self._report(ctx, pool, report_rows, rounds, dropped)

    def _use_reasoning(self, ctx: StrategyContext) -> bool:
        return bool(ctx.settings.reasoning_model)

    def _seed_pool(self, ctx: StrategyContext) -> Pool:
        pool = Pool()
        base = ctx.best_prompt
        pool.add(base, "base")
        want = min(self.options.generated, self.options.pool_size - 1)
        if want and self._use_reasoning(ctx):
            inputs = "\n".join(f"- {e.input[:200]}" for e in list(ctx.train)[:3])
            user = render(
                "pdo.pool",
                ctx.settings.reasoning_templates,
                current=base,
                inputs=inputs,
                count=want,
            )
            messages = [
                {"role": "system", "content": system_prompt(ctx, "pdo.system")},
                {"role": "user", "content": user},
            ]

            def parse(answer: str) -> list[str]:
                return parse_prompts(answer, exclude=[base])

            prompts, error = ask(ctx, "pdo: seed the pool", messages, parse)
            for prompt in (prompts or [])[:want]:
                pool.add(prompt, "generated")
            if error:
                self.notes.append(f"pool generation failed: {error}")
        for name in TRANSFORMS:
            if len(pool.entries) >= self.options.pool_size:
                break
            pool.add(apply_transform(name, base), f"layout:{name}")
        ctx.log("pdo_pool", size=len(pool.entries), origins=[e.origin for e in pool.entries])
        return pool

    def _pair(self, ctx: StrategyContext, pool: Pool) -> tuple[int, int]:
        fresh = [i for i in pool.alive if pool.entries[i].mutant and not pool.entries[i].duels]
        if fresh:  # a new mutant meets the best other prompt before anything else
            fused = pool.fused()
            others = [i for i in pool.alive if i != fresh[0]]
            return max(others, key=lambda i: (fused[i], -i)), fresh[0]
        return rk.double_thompson(pool.wins, pool.alive, ctx.rng)

    def _pairwise(self, ctx: StrategyContext) -> bool:
        """Duels go to a pairwise judge only on label-free runs that have a judge metric."""
        judging = ctx.capability(JUDGING)
        return self.options.judge_duels and judging.label_free and judging.judge is not None

    def _duel(self, ctx: StrategyContext, pool: Pool, rows: list[Example]) -> None:
        i, j = self._pair(ctx, pool)
        a = ctx.evaluate(pool.entries[i].prompt, rows)
        b = ctx.evaluate(pool.entries[j].prompt, rows)
        theirs = {s.key: s for s in b.samples}
        pairs = [(mine, theirs[mine.key]) for mine in a.samples if mine.key in theirs]
        judged = self._pairwise(ctx)
        outcomes = self._judged(ctx, pairs, i, j) if judged else _by_metric(pairs)
        for (mine, other), outcome in zip(pairs, outcomes, strict=True):
            if outcome is not None and outcome != 0.5:
                side, loser, winner = (i, mine, other) if outcome < 0.5 else (j, other, mine)
                example = ctx.train.by_id(loser.example_id)
                field = ctx.settings.feedback_field
                evidence = evidence_lines(example, loser, LOSS_CHARS, field)
                notes = "\n".join([pipeline_notes(loser, LOSS_CHARS), *evidence]).strip("\n")
                pool.entries[side].losses.append(
                    (example.input, loser.output, winner.output, notes)
                )
        decided = [o for o in outcomes if o is not None]
        share = pool.record(i, j, decided, self.options.eta)
        ctx.log(
            "pdo_duel",
            first=i,
            second=j,
            rows=len(decided),
            first_share=round(share, 4),
            decided_by="pairwise judge" if judged else "metric",
        )

    def _judged(
        self, ctx: StrategyContext, pairs: list[tuple[Sample, Sample]], i: int, j: int
    ) -> list[float | None]:
        """First's share of each row by the pairwise judge (both orders asked, see pairwise)."""
        rows = [(ctx.train.by_id(m.example_id), m.output, o.output) for m, o in pairs]
        verdicts = ctx.capability(JUDGING).judge_pairs(rows)
        for (mine, _), verdict in zip(pairs, verdicts, strict=True):
            if verdict.error is not None:  # counted as a tie, and said so
                ctx.log(
                    "pdo_pairwise_unusable", first=i, second=j, row=mine.key, error=verdict.error
                )
        ctx.log(
            "pdo_pairwise",
            first=i,
            second=j,
            rows=len(verdicts),
            position_bias=sum(v.position_bias for v in verdicts),
            unusable=sum(v.error is not None for v in verdicts),
        )
        return [v.share for v in verdicts]

    def _mutate(self, ctx: StrategyContext, pool: Pool) -> None:
        fused = pool.fused()
        top = sorted(pool.alive, key=lambda i: (-fused[i], i))[: self.options.mutate_top]
        for index in top:
            prompt = self._mutant(ctx, pool, index)
            if prompt is not None and pool.add(prompt, f"mutant of #{index}", mutant=True):
                ctx.log("pdo_mutant", parent=index, index=len(pool.entries) - 1)

    def _mutant(self, ctx: StrategyContext, pool: Pool, index: int) -> str | None:
        entry = pool.entries[index]
        known = [e.prompt for e in pool.entries]
        if not self._use_reasoning(ctx):
            layouts = (apply_transform(name, entry.prompt) for name in TRANSFORMS)
            return next((p for p in layouts if p.strip() not in {k.strip() for k in known}), None)
        rate = rk.win_rate(pool.wins, pool.alive)[index]
        cut = LOSS_CHARS
        losses = (
            "\n\n".join(
                f"input: {q[:cut]}\nits output: {o[:cut]}\nwinner's output: {w[:cut]}"
                + (f"\n{notes}" if notes else "")
                for q, o, w, notes in entry.losses[-3:]
            )
            or "(none recorded)"
        )
        user = render(
            "pdo.mutate",
            ctx.settings.reasoning_templates,
            current=entry.prompt,
            win_rate=f"{rate:.0%}",
            losses=losses,
        )
        messages = [
            {"role": "system", "content": system_prompt(ctx, "pdo.system")},
            {"role": "user", "content": user},
        ]

        def parse(answer: str) -> Proposal:
            return parse_proposal(answer, current=entry.prompt, forbidden=known)

        proposal, error = ask(ctx, "pdo: mutate a top prompt", messages, parse)
        if proposal is None:
            self.notes.append(f"mutation of #{index} failed: {error}")
            return None
        return proposal.prompt

    def _report(
        self, ctx: StrategyContext, pool: Pool, rows: list[Example], rounds: int, dropped: list[int]
    ) -> None:
        champion = pool.champion()
        fused = pool.fused()
        snapshot = ctx.evaluate(pool.entries[champion].prompt, rows)
        lines = [
            f"pdo round {rounds}: champion #{champion} ({pool.entries[champion].origin}), "
            f"fused rank {fused[champion]:.3f}, train metric {snapshot.mean_score:.3f}",
            "weights: " + ", ".join(f"{m} {w:.2f}" for m, w in pool.weights.items()),
        ]
        lines += [f"pruned: {dropped}"] if dropped else []
        lines += self.notes
        self.notes = []
        ctx.state["pdo"] = _summary(pool, champion)
        ctx.log(
            "pdo_round",
            round=rounds,
            champion=champion,
            weights=pool.weights,
            fused={str(i): round(fused[i], 4) for i in pool.alive},
        )
        ctx.record_iteration(pool.entries[champion].prompt, snapshot, reasoning="\n".join(lines))


def _by_metric(pairs: list[tuple[Sample, Sample]]) -> list[float | None]:
    """First's share of each row by the user's metrics; unscored rows decide nothing (None)."""
    out: list[float | None] = []
    for mine, other in pairs:
        if mine.score is None or other.score is None:
            out.append(None)  # errors, or no reference for a reference metric
        else:
            out.append(
                1.0 if mine.score > other.score else 0.0 if mine.score < other.score else 0.5
            )
    return out


def _summary(pool: Pool, champion: int) -> dict[str, object]:
    return {
        "champion": champion,
        "weights": dict(pool.weights),
        "pool": [{"origin": e.origin, "alive": e.alive, "duels": e.duels} for e in pool.entries],
    }


@hookimpl
def register_strategies(register: StrategyRegistrar) -> None:
    register(PDOStrategy)
