"""reflex.models.deadline: one attempt's total deadline (the trickling provider end to end is
tests/reliability/test_hangs.py)."""

from __future__ import annotations

import asyncio

import pytest

from reflex.models.deadline import CallDeadlineExceeded, call_deadline, within_deadline
from reflex.models.retry import is_transient
from reflex.models.spec import ModelSpec
from reflex.testing import FakeModel


def test_a_remote_provider_s_deadline_is_its_timeout() -> None:
    assert call_deadline(ModelSpec("openai/gpt-4o-mini", timeout=12.5)) == 12.5


def test_an_in_process_provider_has_no_deadline() -> None:
    FakeModel(lambda request: "ok").install()
    assert call_deadline(ModelSpec("fake/m", timeout=1.0)) is None


def test_within_the_deadline_the_answer_is_returned() -> None:
    async def answer() -> str:
        return "done"

    assert asyncio.run(within_deadline(answer(), 5.0)) == "done"
    assert asyncio.run(within_deadline(answer(), None)) == "done"


def test_past_the_deadline_the_attempt_is_cancelled_and_transient() -> None:
    cancelled = []

    async def stalled() -> str:
        try:
            await asyncio.Event().wait()  # never set: a provider that never finishes
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    with pytest.raises(CallDeadlineExceeded, match=r"no complete answer within 0\.01s") as caught:
        asyncio.run(within_deadline(stalled(), 0.01))
    assert cancelled == [True] and caught.value.seconds == 0.01
    assert is_transient(caught.value)
