"""Reasoning-model prompts (named, overridable templates) and the robust parsing of answers.

Every prompt a strategy sends to the reasoning model is a template here, looked up by name:
``reflex.judging.reasoning.set_template("iterative.system", text)`` overrides one for the process, a
run's ``reasoning_templates`` setting (builder ``.set_reasoning_template``, CLI
``--reasoning-template NAME=FILE``) for one run. ``{field}`` placeholders are filled in;
unknown braces are left as they are. ``system_prompt`` appends the run's guidance: the
dataset's language and, with ``source_model``, migration advice between model families.
In pipeline mode the example rows a template receives (``{rows}`` of ``iterative.brief`` and
``gepa.reflect``, ``{losses}`` of ``pdo.mutate``) also hold each example's failure reason and
its trace of named steps, cut to a budget (``reflex_strategies._rows``).

Answers are expected as tagged sections (``<prompt>...</prompt>``). We also accept a JSON object
with the same keys and, as a last resort, a fenced code block, because real models drift.
``ask`` sends one request, records its purpose, tokens and parse outcome as a
``reasoning_call`` event, retries an unusable answer once and then gives up without raising:
the failure is recorded as a failed proposal (``result.failed_proposals``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from reflex.data.demos import split_chat_demos
from reflex.data.language import Language, detect_language
from reflex.data.templates import parse_template, placeholders, template_problem, variables_of
from reflex.data.tool_text import split_tools_section, strip_tools_section, tools_problem
from reflex.errors import ConfigurationError
from reflex.judging.templates import DEFAULT_TEMPLATES, family, migration_notes
from reflex.types import REASONING

if TYPE_CHECKING:
    from reflex.types import StrategyContext

__all__ = [
    "Proposal",
    "ProposalError",
    "ask",
    "guidance",
    "parse_prompts",
    "parse_proposal",
    "render",
    "reset_templates",
    "set_template",
    "system_prompt",
    "tagged",
    "template",
    "template_names",
]

T = TypeVar("T")
_overrides: dict[str, str] = {}
_FIELD = re.compile(r"\{(\w+)\}")


def template_names() -> list[str]:
    """Names of every reasoning template, sorted."""
    return sorted(DEFAULT_TEMPLATES)


def _check_name(name: str) -> None:
    if name not in DEFAULT_TEMPLATES:
        raise ConfigurationError(
            f"unknown reasoning template {name!r}; known: {', '.join(template_names())}"
        )


def set_template(name: str, text: str) -> None:
    """Override template ``name`` for this process (a run's own overrides still win)."""
    _check_name(name)
    if not text.strip():
        raise ConfigurationError(f"reasoning template {name!r} is empty")
    _overrides[name] = text


def reset_templates() -> None:
    """Drop every process-wide override made with ``set_template``."""
    _overrides.clear()


def template(name: str, overrides: Mapping[str, str] | None = None) -> str:
    """The text of template ``name``: the run's override, else the process's, else the default."""
    _check_name(name)
    if overrides and name in overrides:
        return overrides[name]
    return _overrides.get(name, DEFAULT_TEMPLATES[name])


def render(name: str, overrides: Mapping[str, str] | None = None, **fields: object) -> str:
    """Template ``name`` with its ``{field}`` placeholders filled in."""
    text = template(name, overrides)
    return _FIELD.sub(lambda m: str(fields[m[1]]) if m[1] in fields else m[0], text)


def guidance(ctx: StrategyContext) -> str:
    """The run's language line, plus migration advice when a source model is configured."""
    config = ctx.settings
    language = _language_of((*(e.input for e in ctx.train), *(e.ideal or "" for e in ctx.train)))
    lines = [render("guidance.language", config.reasoning_templates, language=language.name)]
    if config.source_model:
        source, target = config.source_model, ", ".join(config.models)
        lines.append(
            render(
                "guidance.migration",
                config.reasoning_templates,
                source_model=source,
                target_model=target,
                notes=migration_notes(source, config.models[0]),
                source_family=family(source),
                target_family=family(config.models[0]),
            )
        )
    blocks, rest = split_tools_section(ctx.initial_prompt)
    messages = parse_template(split_chat_demos(rest)[0])
    if messages is not None and variables_of(messages):
        fixed = ", ".join("{{" + name + "}}" for name in variables_of(messages))
        lines.append(render("guidance.template", config.reasoning_templates, placeholders=fixed))
    if isinstance(blocks, list):
        names = ", ".join(dict.fromkeys(repr(b.function) for b in blocks))
        lines.append(render("guidance.tools", config.reasoning_templates, functions=names))
    if config.format_names:
        fields = ", ".join(repr(name) for name in config.format_names)
        lines.append(render("guidance.format", config.reasoning_templates, fields=fields))
    return "\n".join(lines)


@functools.lru_cache(maxsize=8)
def _language_of(texts: tuple[str, ...]) -> Language:
    """``detect_language`` of the train rows' texts, once per distinct split: every reasoning
    call's system prompt carries it, and on thousands of rows it cost tens of milliseconds on
    the iterations' serial path (a hit compares the texts, which the rows share, not copies)."""
    return detect_language(texts)


def system_prompt(ctx: StrategyContext, name: str, **fields: object) -> str:
    """System message ``name`` for the reasoning model, followed by the run's guidance."""
    return render(name, ctx.settings.reasoning_templates, **fields) + "\n\n" + guidance(ctx)


def _reasoning_tokens(ctx: StrategyContext) -> int:
    return ctx.budget.reasoning_tokens


def ask(
    ctx: StrategyContext,
    purpose: str,
    messages: Sequence[Mapping[str, str]],
    parse: Callable[[str], T],
) -> tuple[T | None, str]:
    """Ask, parse, retry once on a ``ProposalError``: ``(value, "")`` or ``(None, reason)``.

    Through the context's reasoning capability (``ctx.capability(REASONING)``)."""
    reasoning = ctx.capability(REASONING)
    sent = [dict(m) for m in messages]
    error = ""
    for attempt in (1, 2):
        before = _reasoning_tokens(ctx)
        answer = reasoning.reason(sent)
        tokens = _reasoning_tokens(ctx) - before
        try:
            value = parse(answer)
        except ProposalError as exc:
            error = str(exc)
            ctx.log(
                "reasoning_call",
                purpose=purpose,
                attempt=attempt,
                tokens=tokens,
                outcome="unusable",
                error=error,
            )
            retry = render("retry", ctx.settings.reasoning_templates, error=error)
            sent = [
                *sent,
                {"role": "assistant", "content": answer},
                {"role": "user", "content": retry},
            ]
            continue
        ctx.log("reasoning_call", purpose=purpose, attempt=attempt, tokens=tokens, outcome="ok")
        return value, ""
    reasoning.fail_proposal(purpose, error, attempts=2)
    return None, f"reasoning model gave no usable answer twice ({purpose}): {error}"


class ProposalError(ValueError):
    """The reasoning model's answer had no usable prompt; the message says why."""


@dataclass(frozen=True)
class Proposal:
    prompt: str
    diagnosis: str = ""
    edit: str = ""
    answer: str = ""  # the reasoning model's whole answer

    @property
    def reasoning(self) -> str:
        """What an iteration records as its reasoning: the diagnosis, else the whole answer
        (an answer with no diagnosis section still says why it changed the prompt)."""
        return self.diagnosis or self.answer.strip()


def tagged(text: str, tag: str) -> str | None:
    """Content of the last ``<tag>...</tag>`` in ``text`` (tolerates a missing close tag)."""
    matches = re.findall(rf"<{tag}>\s*(.*?)\s*</{tag}>", text, flags=re.S | re.I)
    if matches:
        return str(matches[-1]).strip()
    opened = re.search(rf"<{tag}>\s*(.*)$", text, flags=re.S | re.I)
    return opened.group(1).strip() if opened else None


def _from_json(text: str) -> dict[str, str] | None:
    match = re.search(r"\{.*\}", text, flags=re.S)
    if not match:
        return None
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else None


def _from_fence(text: str) -> str | None:
    blocks = re.findall(r"```[a-zA-Z]*\n(.*?)```", text, flags=re.S)
    return blocks[-1].strip() if blocks else None


def parse_proposal(
    text: str, *, current: str, forbidden: Sequence[str] = (), fixed: Sequence[str] | None = None
) -> Proposal:
    """Extract a revised prompt; raise ProposalError when it is missing, empty or unchanged,
    or breaks the chat template ``current`` is (its messages and placeholders) or the fixed
    lines of its ``<tools>`` section (:mod:`reflex.data.tool_text`), or changes the
    ``fixed`` placeholders (a template component's, in order of use, repeats included)."""
    data = _from_json(text) if tagged(text, "prompt") is None else None
    prompt = tagged(text, "prompt") or (data or {}).get("prompt") or _from_fence(text)
    if not prompt or not prompt.strip():
        raise ProposalError("no revised prompt found: put it between <prompt> and </prompt>")
    prompt = prompt.strip()
    if prompt == current.strip():
        raise ProposalError("the revised prompt is identical to the current one")
    for text_seen in forbidden:
        if text_seen and text_seen.strip() == prompt:
            raise ProposalError("the revised prompt repeats one that was already tried")
    problem = tools_problem(current, prompt) or template_problem(
        split_chat_demos(strip_tools_section(current))[0],
        split_chat_demos(strip_tools_section(prompt))[0],
    )
    if problem is None and fixed is not None and sorted(placeholders(prompt)) != sorted(fixed):
        wanted = ", ".join("{{" + name + "}}" for name in fixed) or "none"
        problem = f"the revised text must keep exactly the placeholders {wanted}"
    if problem is not None:
        raise ProposalError(problem)
    diagnosis = tagged(text, "diagnosis") or (data or {}).get("diagnosis", "")
    edit = tagged(text, "edit") or (data or {}).get("edit", "")
    return Proposal(prompt=prompt, diagnosis=diagnosis, edit=edit, answer=text)


def parse_prompts(text: str, *, exclude: Sequence[str] = ()) -> list[str]:
    """Every distinct ``<prompt>`` block in ``text`` not in ``exclude``; raise when none is left."""
    seen = {e.strip() for e in exclude}
    out: list[str] = []
    for block in re.findall(r"<prompt>\s*(.*?)\s*</prompt>", text, flags=re.S | re.I):
        prompt = str(block).strip()
        if prompt and prompt not in seen:
            seen.add(prompt)
            out.append(prompt)
    if not out:
        raise ProposalError("no new prompt found: put each one between <prompt> and </prompt>")
    return out
