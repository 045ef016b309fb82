"""``gepa``'s reflective rewrite: what the reasoning model is shown and asked for one proposal.

Which components a proposal rewrites (``component_selection``: one per iteration in turn, or
all; under ``--rewrite-messages`` only those messages, tool descriptions always), what the
reasoning model sees for each (the whole prompt, the component, the parent's minibatch rows
with the metrics' feedback, and the last ``memory`` rewrites of that component the minibatch gate
refused, which it may not propose again), and the rewrite it answers (a template's component
keeps its placeholders exactly).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Literal, NamedTuple, TypedDict

from reflex.api import ask, parse_proposal, placeholders, render, system_prompt

from ._rows import sample_row

if TYPE_CHECKING:
    from reflex.api import EvalSnapshot, PromptSpec, Sample, StrategyContext

    from ._merge import Candidate

__all__ = ["Proposal", "Reflection"]


class _Rejected(TypedDict):
    """A component text the minibatch gate refused, shown to the reasoner so it moves on."""

    component: str
    text: str
    score: float
    parent: float


class Proposal(NamedTuple):
    """A child's components, the names rewritten, the reasoner's notes, and the error that
    ended the proposal early (None: every rewrite was answered)."""

    child: dict[str, str]
    changed: list[str]
    notes: str
    error: str | None


class Reflection:
    """The rewrites of one ``gepa`` run: whose turn it is, and the rewrites the gate refused."""

    def __init__(
        self, selection: Literal["round_robin", "all"], memory: int, max_chars: int
    ) -> None:
        self._selection = selection
        self._shown = memory  # rejected rewrites shown per component
        self._max_chars = max_chars
        self._memory: list[_Rejected] = []
        self._turn = 0

    def propose(
        self, ctx: StrategyContext, spec: PromptSpec, parent: Candidate, before: EvalSnapshot
    ) -> Proposal:
        """Ask the reasoning model to rewrite the components whose turn it is, one at a time."""
        child = dict(parent.components)
        changed: list[str] = []
        notes: list[str] = []
        editable = ctx.settings.rewrite_messages
        # --rewrite-messages limits the template's messages; tool descriptions stay editable.
        names = [n for n in spec.names if editable is None or n in editable or _tool_part(n)]
        template = bool(spec.variables)  # a component keeps its placeholders
        for name in self._targets(names or spec.names):
            current = parent.components[name]
            tried = [m["text"] for m in self._memory if m["component"] == name]
            messages = [
                {"role": "system", "content": system_prompt(ctx, "gepa.system")},
                {"role": "user", "content": self._brief(ctx, spec, parent, name, before)},
            ]
            proposal, error = ask(
                ctx,
                f"gepa: rewrite {name}",
                messages,
                partial(
                    parse_proposal,
                    current=current,
                    forbidden=tried,
                    fixed=placeholders(current) if template else None,
                ),
            )
            if proposal is None:
                return Proposal(child, changed, "\n".join(notes), error)
            child[name] = proposal.prompt
            changed.append(name)
            label = "" if spec.is_single else f"[{name}] "
            notes.append(label + (proposal.diagnosis or proposal.edit or proposal.reasoning))
        return Proposal(child, changed, "\n".join(notes), None)

    def refused(
        self, changed: Sequence[str], child: dict[str, str], score: float, parent: float
    ) -> None:
        """The minibatch gate refused ``child``: remember its rewrites of ``changed``."""
        for name in changed:
            self._memory.append(
                {"component": name, "text": child[name], "score": score, "parent": parent}
            )

    def _targets(self, names: Sequence[str]) -> list[str]:
        if self._selection == "all":
            return list(names)
        name = names[self._turn % len(names)]
        self._turn += 1
        return [name]

    def _brief(
        self,
        ctx: StrategyContext,
        spec: PromptSpec,
        parent: Candidate,
        name: str,
        before: EvalSnapshot,
    ) -> str:
        rows = [self._row(ctx, s) for s in before.samples]
        memory = [m for m in self._memory if m["component"] == name][-self._shown :]
        rejected = (
            "\n".join(
                f"- scored {m['score']:.3f} vs parent {m['parent']:.3f}: {m['text'][:300]!r}"
                for m in memory
            )
            if self._shown
            else ""
        )
        return render(
            "gepa.reflect",
            ctx.settings.reasoning_templates,
            whole=spec.render(parent.components),
            component=name,
            current=parent.components[name],
            score=f"{before.mean_score:.3f}",
            rows="\n\n".join(rows),
            rejected=rejected or "- none yet",
        )

    def _row(self, ctx: StrategyContext, sample: Sample) -> str:
        example = ctx.train.by_id(sample.example_id)
        field = ctx.settings.feedback_field
        return sample_row(example, sample, self._max_chars, feedback_field=field)


def _tool_part(name: str) -> bool:
    """A tool description's component (``--optimize-tool-descriptions``), not a message."""
    return name.startswith(("tool-", "param-"))
