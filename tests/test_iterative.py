"""iterative: an unusable answer retried once, the rewrite log, only adopted revisions go to val."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import BETTER, KEYWORD, responder
from test_engine import START, builder

from reflex.testing import FakeModel, FakeRequest


def test_unusable_reasoning_answer_is_retried_then_recorded_as_failed(tmp_path: Path) -> None:
    answers = iter(["no tags here", "still nothing", f"<prompt>{BETTER}</prompt>"])

    def answer(request: FakeRequest) -> str:
        if request.model == "fake/reasoner":
            return next(answers)
        return responder(request)

    fake = FakeModel(answer).install()
    result = builder(tmp_path).configure(max_iterations=3).run(START)
    first, second, third = result.iterations
    assert first.failed is not None and "twice" in first.failed and not first.accepted
    assert second.failed is None and second.accepted and second.system_prompt == BETTER
    # the adopted prompt is perfect on the next minibatch: no reasoning call is paid for it
    assert third.rejected is not None and "perfect" in third.rejected
    assert len(fake.calls_to("fake/reasoner")) == 3


def test_rewrite_log_pairs_edits_with_their_change(tmp_path: Path) -> None:
    briefs: list[str] = []

    def answer(request: FakeRequest) -> str:
        if request.model == "fake/reasoner":
            briefs.append(request.user)
            n = len(briefs)
            return f"<edit>edit {n}</edit><prompt>{START} v{n} {KEYWORD if n == 2 else ''}</prompt>"
        return responder(request)

    FakeModel(answer).install()
    result = builder(tmp_path).configure(max_iterations=3, early_stopping_patience=None).run(START)
    assert "edit 1 -> change +0.000 (reverted)" in briefs[1]
    checkpoint = json.loads((Path(str(result.run_dir)) / "checkpoint.json").read_text())
    log = checkpoint["state"]["rewrite_log"]
    assert [(e["edit"], e["accepted"]) for e in log] == [("edit 1", False), ("edit 2", True)]
    assert log[0]["change"] == 0.0 and log[1]["change"] > 0


@pytest.mark.parametrize("gate", [True, False])
def test_only_adopted_revisions_are_measured_on_val(tmp_path: Path, gate: bool) -> None:
    """A revision no better on its minibatch pays no val evaluation unless ``val_gate`` is off."""
    count = iter(range(1, 100))

    def answer(request: FakeRequest) -> str:
        if request.model == "fake/reasoner":
            n = next(count)
            return f"<edit>edit {n}</edit><prompt>{START} v{n} {KEYWORD if n == 2 else ''}</prompt>"
        return responder(request)

    FakeModel(answer).install()
    result = (
        builder(tmp_path)
        .set_strategy("iterative", val_gate=gate)
        .configure(max_iterations=2, early_stopping_patience=None)
        .run(START)
    )
    first, second = result.iterations
    assert first.accepted is False and second.accepted is True and second.val_score is not None
    if gate:
        assert first.val_score is None and first.rejected is not None
        assert "no better" in first.rejected
    else:
        assert first.val_score is not None and first.rejected is None
