"""The run context's opt-in parts and the iteration verdict (reflex/run/capabilities.py):
``verdict`` turns an Outcome, or the deprecated keywords, into the three facts the engine
records; ``offered`` names what each capability key gives."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from reflex.result import Outcome
from reflex.run.capabilities import LEGACY_FLAGS, offered, verdict
from reflex.types import COMPONENTS, JUDGING, PHASES, REASONING, SCREENING, STRATEGIES


def test_an_outcome_becomes_the_three_facts_the_engine_records() -> None:
    assert verdict(None, {}) == (None, None, None)  # no outcome: val decides
    assert verdict(Outcome.accepted(), {}) == (True, None, None)
    assert verdict(Outcome.declined(), {}) == (False, None, None)
    assert verdict(Outcome.rejected("r"), {}) == (False, None, "r")
    assert verdict(Outcome.failed("boom"), {}) == (False, "boom", None)


def test_the_old_keywords_keep_their_meaning_and_warn() -> None:
    assert {"accepted", "failed", "rejected"} == LEGACY_FLAGS
    with pytest.warns(DeprecationWarning, match="pass an Outcome"):
        assert verdict(None, {"accepted": True}) == (True, None, None)
    with pytest.warns(DeprecationWarning, match="goes in the next release"):
        assert verdict(None, {"failed": "boom", "rejected": None}) == (None, "boom", None)


def test_mixed_or_misspelt_calls_are_type_errors() -> None:
    with pytest.raises(TypeError, match="not both"), warnings.catch_warnings():
        verdict(Outcome.accepted(), {"accepted": True})
    with pytest.raises(TypeError, match="unexpected keyword argument 'acepted'"):
        verdict(None, {"acepted": True})


def test_every_key_offers_the_context_itself() -> None:
    context: Any = object()  # offered() hands back what it is given, typed by each protocol
    parts = offered(context)
    assert set(parts) == {REASONING, COMPONENTS, SCREENING, PHASES, JUDGING, STRATEGIES}
    assert all(part is context for part in parts.values())
