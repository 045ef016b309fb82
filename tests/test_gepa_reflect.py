"""gepa's reflective rewrite (strategies/_gepa_reflect.py): the components a proposal rewrites,
and the refused rewrites the reasoning model is shown (the minibatch gate's memory)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

from conftest import BETTER, make_rows, responder

from reflex import PromptOptimizer
from reflex.data.prompts import PromptSpec
from reflex.testing import FakeModel, FakeRequest

START = "Classify the sentiment."
TWO_PARTS = PromptSpec({"role": "You classify reviews.", "format": "Be careful."})


def gepa(run_dir: Path, iterations: int, **options: Any) -> PromptOptimizer:
    """gepa on 40 rows with minibatches of 6, no early stop."""
    return (
        PromptOptimizer()
        .set_dataset(make_rows(40))
        .add_provider("fake/task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_strategy("gepa", minibatch_size=6, **options)
        .set_run_dir(run_dir)
        .configure(max_iterations=iterations, early_stopping_patience=None, max_workers=4)
    )


def _gate_reasoner(request: FakeRequest) -> str:
    if request.model != "fake/reasoner":
        return responder(request)
    n = request.user.count("- scored ")
    # The first two rewrites make things worse; the third one is the fix.
    text = f"{START} Think step by step, attempt {n}." if n < 2 else BETTER
    return f"<diagnosis>d{n}</diagnosis><edit>e{n}</edit><prompt>{text}</prompt>"


def test_minibatch_gate_and_rejection_memory(tmp_path: Path) -> None:
    fake = FakeModel(_gate_reasoner).install()
    result = gepa(tmp_path, 6).run(START)
    rejected = [r for r in result.iterations if r.rejected and "gate" in r.rejected]
    assert len(rejected) == 2 and all(r.val_score is None and not r.accepted for r in rejected)
    accepted = [r for r in result.iterations if r.accepted]
    assert accepted[0].system_prompt == BETTER and accepted[0].val_score == 1.0
    briefs = [r.user for r in fake.calls_to("fake/reasoner")]
    assert "attempt 0" in briefs[1] and "attempt 1" in briefs[2]  # rejected rewrites shown


def _unhelpful(request: FakeRequest) -> str:
    """A reasoner whose every rewrite is new and no better (the task model never answers right)."""
    if request.model != "fake/reasoner":
        return "unsure"
    return f"<prompt>Rewrite number {next(REWRITES)} of {_asked(request)}.</prompt>"


REWRITES = itertools.count()


def _asked(request: FakeRequest) -> str:
    brief = request.messages[1]["content"]  # the brief, also when this is a retry
    return re.findall(r"Rewrite the component '(\w+)'", brief)[0]


def test_components_are_rewritten_in_turn_or_all_at_once(tmp_path: Path) -> None:
    fake = FakeModel(_unhelpful).install()
    gepa(tmp_path / "turns", 4, merge=False).set_allow_degenerate_seed().run(TWO_PARTS)
    turns = [_asked(r) for r in fake.calls_to("fake/reasoner")]
    assert turns == ["role", "format", "role", "format"]
    fake.requests.clear()
    every = gepa(tmp_path / "all", 2, merge=False, component_selection="all")
    every.set_allow_degenerate_seed().run(TWO_PARTS)
    assert [_asked(r) for r in fake.calls_to("fake/reasoner")] == ["role", "format"] * 2


def test_memory_0_shows_no_refused_rewrite(tmp_path: Path) -> None:
    fake = FakeModel(_unhelpful).install()
    gepa(tmp_path, 3, memory=0).set_allow_degenerate_seed().run(START)
    briefs = [r.messages[1]["content"] for r in fake.calls_to("fake/reasoner")]
    assert len(briefs) == 3 and all(b.endswith("(do not repeat them):\n- none yet") for b in briefs)
