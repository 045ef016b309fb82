"""``fewshot``: bootstrap demonstrations from train and select a demo set on val; no reasoning.

1. Pool: ``demo_source="labels"`` uses the train rows' references (no calls). With
   ``"bootstrap"`` the base prompt is run on ``bootstrap_rows`` seeded train rows (one-off
   cost: that many calls, fewer on cache hits); rows it gets right (score >=
   ``min_demo_score``) become demos first, then the other train rows with a reference fill the
   pool; when every train row has a reference and the bootstrap would cost over a quarter of
   the calls a ``--max-calls`` budget has left, the pool is built as for ``"labels"`` (the
   calls buy a candidate instead). ``"auto"`` (the default) is ``"labels"`` when every train
   row has a reference, else ``"bootstrap"`` (the references scored higher on intents7 and
   level on the other bench tasks, with no bootstrap calls; bench/README.md). Demos never
   come from val or test: the pool is ``ctx.train``. A demo's output is the reference, or the
   model's own (correct) output when the row has none.
2. Candidates: ``num_candidates`` demo sets, sizes from ``candidate_sizes`` (capped at
   ``max_demos``) largest first, round-robin, each drawn with ``ctx.rng`` balanced across
   outputs (labels) with bootstrapped rows preferred. When the pool's outputs are a label set
   of more than ``max_demos`` but at most ``cover_labels`` labels, the first candidate is one
   demo per label (a 4-demo set cannot show 7 labels). Zero-shot (size 0) is the incumbent
   prompt, already scored on val, so it competes at no cost and is never re-measured.
3. A candidate is the base prompt followed by its demos (fixed text first for the local model's
   KV prefix cache); each is one iteration, selected on val by ``ctx.record_iteration``. With
   ``demo_format="turns"`` (the default) the demos are an ``Examples (as chat turns):`` section,
   sent to the model as user/assistant turns after the system message
   (:mod:`reflex.data.demos`); ``"system"`` keeps them as an ``Examples:`` section of
   ``Input:``/``Output:`` pairs inside the system prompt. Small models copy the in-prompt
   ``Output:`` label into their answers (Qwen2.5-Coder-0.5B: 0.00 on 2-digit addition with four
   demos in the system prompt, 0.95 with the same demos as turns; bench/README.md).

Model calls per iteration: ``len(val)``, or with train-minibatch screening (see
``reflex_strategies._common``; the candidate's own demo rows are left out of the minibatch)
up to ``batch_size`` plus ``len(val)`` when the candidate survives. Plus the one-off bootstrap.
Under ``--race`` the demo sets are raced instead (``reflex_strategies._race``): no train
screening, a quarter of the val rows each first, the clearly worse dropped there, so a call
budget tries more demo draws (``auto`` gives its demo step the candidates a race can afford).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from reflex.api import PHASES, BaseStrategy, Example, StrategyRegistrar, hookimpl, render_chat_demos

from ._common import join_sections, references, screening_batch, try_candidate
from ._race import Candidate, race_once

if TYPE_CHECKING:
    from reflex.api import StrategyContext

__all__ = [
    "Demo",
    "FewshotOptions",
    "FewshotStrategy",
    "demo_pool",
    "pick_demos",
    "register_strategies",
    "render_demos",
]

HEADER = "Examples:"


class FewshotOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_demos: int = Field(
        default=4, gt=0, description="most demonstrations in a drawn set (cover_labels aside)"
    )
    candidate_sizes: list[int] = Field(
        default_factory=lambda: [0, 1, 2, 4],
        min_length=1,
        description="demo-set sizes searched; 0 is zero-shot",
    )
    num_candidates: int = Field(default=6, gt=0, description="demo sets tried (not zero-shot)")
    cover_labels: int = Field(
        default=16, ge=0, description="up to this many labels, first try one demo per label"
    )
    demo_source: Literal["auto", "bootstrap", "labels"] = Field(
        default="auto",
        description="labels: train references; bootstrap: rows the prompt gets right first; "
        "auto: labels when every train row has a reference, else bootstrap",
    )
    bootstrap_rows: int = Field(default=16, gt=0, description="train rows run to bootstrap")
    min_demo_score: float = Field(
        default=1.0, ge=0.0, le=1.0, description="score a bootstrapped row needs to be a demo"
    )
    max_demo_chars: int = Field(default=400, gt=10, description="skip longer demo inputs")
    demo_format: Literal["turns", "system"] = Field(
        default="turns",
        description="demos as chat turns after the system message, or as system-prompt text",
    )
    screen: bool | None = Field(
        default=None,
        description="screen on a train minibatch first; None: only when 2 * batch_size <= len(val)",
    )

    def sizes(self) -> list[int]:
        """Non-zero demo-set sizes to try, capped at ``max_demos``, largest first."""
        return sorted({min(s, self.max_demos) for s in self.candidate_sizes if s > 0}, reverse=True)


@dataclass(frozen=True)
class Demo:
    example_id: str
    input: str
    output: str
    bootstrapped: bool


def render_demos(demos: list[Demo], demo_format: str = "system") -> str:
    """The demos' section: ``Examples (as chat turns):`` for ``"turns"``, else ``Examples:``.

    One ``Input:``/``Output:`` pair per demo, whitespace collapsed.
    """
    if demo_format == "turns":
        return render_chat_demos([(d.input, d.output) for d in demos])
    blocks = [
        f"Input: {' '.join(d.input.split())}\nOutput: {' '.join(d.output.split())}" for d in demos
    ]
    return HEADER + "\n\n" + "\n\n".join(blocks)


def pick_demos(pool: list[Demo], size: int, rng: random.Random) -> list[Demo]:
    """``size`` demos balanced across outputs (round-robin), bootstrapped rows first."""
    groups: dict[str, list[Demo]] = {}
    for demo in pool:
        groups.setdefault(demo.output, []).append(demo)
    lists = []
    for key in sorted(groups):
        items = list(groups[key])
        rng.shuffle(items)
        lists.append(sorted(items, key=lambda d: not d.bootstrapped))  # stable
    rng.shuffle(lists)
    lists.sort(key=lambda items: not items[0].bootstrapped)
    chosen: list[Demo] = []
    while len(chosen) < size and any(lists):
        for items in lists:
            if items and len(chosen) < size:
                chosen.append(items.pop(0))
    return chosen


class FewshotStrategy(BaseStrategy[FewshotOptions]):
    name: ClassVar[str] = "fewshot"
    Options: ClassVar[type[BaseModel]] = FewshotOptions
    requires_reasoning_model: ClassVar[bool] = False
    derives_from_data: ClassVar[bool] = True

    def optimize(self, ctx: StrategyContext) -> None:
        state = ctx.state.setdefault(self.name, {})
        base = str(state.setdefault("base", ctx.best_prompt))
        if ctx.should_stop:
            return
        pool = demo_pool(ctx, base, self.options)
        if not pool:
            ctx.log(
                "no_candidates",
                phase=ctx.capability(PHASES).phase,
                reason="no train row has a reference or was answered correctly",
            )
            return
        candidates = self._candidates(ctx, pool)
        if race_once(ctx, state, [self._candidate(base, demos) for demos in candidates]):
            return
        batch = screening_batch(ctx, self.options.screen)
        for index, demos in enumerate(candidates):
            if index < int(state.get("tried", 0)):
                continue  # resumed: already recorded
            if ctx.should_stop:
                return
            candidate = self._candidate(base, demos)
            try_candidate(
                ctx,
                candidate.prompt,
                ctx.best_prompt,
                batch=batch,
                exclude=frozenset(d.example_id for d in demos),
                reasoning=candidate.reasoning,
            )
            state["tried"] = index + 1

    def _candidate(self, base: str, demos: list[Demo]) -> Candidate:
        ids = [d.example_id for d in demos]
        return Candidate(
            join_sections(base, render_demos(demos, self.options.demo_format)),
            reasoning=f"fewshot: {len(demos)} demos from train rows {ids}",
        )

    def _candidates(self, ctx: StrategyContext, pool: list[Demo]) -> list[list[Demo]]:
        sizes = self.options.sizes()
        labels = len({d.output for d in pool})
        if max(sizes, default=0) < labels <= self.options.cover_labels and labels < len(pool):
            sizes = [labels, *sizes]  # one demo per label first
        out: list[list[Demo]] = []
        seen: set[tuple[str, ...]] = set()
        # A few spare draws so duplicate demo sets (small pools) do not shrink the search.
        for draw in range(3 * self.options.num_candidates):
            if len(out) >= self.options.num_candidates or not sizes:
                break
            demos = pick_demos(pool, min(sizes[draw % len(sizes)], len(pool)), ctx.rng)
            key = tuple(d.example_id for d in demos)
            if demos and key not in seen:
                seen.add(key)
                out.append(demos)
        return out


def demo_pool(ctx: StrategyContext, base: str, opts: FewshotOptions) -> list[Demo]:
    """The demos a set is drawn from (the module docstring, step 1): train rows only, those the
    base prompt gets right first when bootstrapping; logged as ``fewshot_pool``."""
    train = [e for e in ctx.train if len(e.input) <= opts.max_demo_chars and e.input.strip()]
    correct: dict[str, str] = {}
    source = opts.demo_source
    if source == "auto":
        source = "labels" if _all_referenced(train) else "bootstrap"
    if source == "bootstrap" and train and _bootstrap_too_dear(ctx, train, opts.bootstrap_rows):
        source = "labels"  # a small call budget buys a candidate instead
    if source == "bootstrap" and train:
        rows = ctx.rng.sample(train, min(opts.bootstrap_rows, len(train)))
        snapshot = ctx.evaluate(base, rows)
        correct = {
            s.example_id: s.output
            for s in snapshot.samples
            if s.score is not None and s.score >= opts.min_demo_score and s.output.strip()
        }
    pool = [_demo(e, correct[e.id], True) for e in train if e.id in correct]
    pool += [
        _demo(e, "", False)
        for e in train
        if e.id not in correct and e.ideal is not None and e.ideal.strip()
    ]
    ctx.log("fewshot_pool", bootstrapped=len(correct), size=len(pool), source=source)
    return pool


def _all_referenced(train: list[Example]) -> bool:
    return len(references(train)) == len(train)


def _bootstrap_too_dear(ctx: StrategyContext, train: list[Example], rows: int) -> bool:
    """Bootstrapping would cost over a quarter of the calls left and every train row has a
    reference (so the pool does not need the model's own answers)."""
    left = ctx.budget.remaining_calls
    if left is None or not _all_referenced(train):
        return False
    return min(rows, len(train)) * ctx.budget.calls_per_row * 4 > left


def _demo(example: Example, model_output: str, bootstrapped: bool) -> Demo:
    output = example.ideal.strip() if example.ideal and example.ideal.strip() else model_output
    return Demo(example.id, example.input, output.strip(), bootstrapped)


@hookimpl
def register_strategies(register: StrategyRegistrar) -> None:
    register(FewshotStrategy)
