"""Content-addressed prompt versions: ids from parent and text, siblings, diffs, old records."""

from __future__ import annotations

import hashlib

from reflex.checks.versions import prompt_versions, record_versions, version_id
from reflex.result import EvalSnapshot, IterationRecord, OptimizationResult


def _result(iterations: list[IterationRecord]) -> OptimizationResult:
    snapshot = EvalSnapshot("p", "test", 0.5, {"m": 0.5})
    best = next((r.system_prompt for r in reversed(iterations) if r.is_best), "Start.")
    return OptimizationResult(
        best, 0.9, snapshot, snapshot, iterations=iterations, initial_prompt="Start."
    )


def test_an_id_is_the_hash_of_parent_and_text() -> None:
    root = version_id(None, "Start.")
    assert root == hashlib.sha256(b"\nStart.").hexdigest()[:16]
    assert version_id(root, "Next.") != version_id(None, "Next.")  # another path, another id


def test_accepted_prompts_become_versions_with_their_rejected_siblings() -> None:
    rejected = IterationRecord(1, 0.4, None, {}, "Worse.", rejected="no better on minibatch")
    kept = IterationRecord(2, 0.8, 0.7, {}, "Start.\nBetter.", reasoning="be better", is_best=True)
    failed = IterationRecord(3, None, None, {}, "x", failed="ProviderError: boom")
    initial, second = prompt_versions(_result([rejected, kept, failed]))
    assert initial["id"] == version_id(None, "Start.") and initial["parent"] is None
    assert second["id"] == version_id(initial["id"], "Start.\nBetter.")  # type: ignore[arg-type]
    assert second["parent"] == initial["id"] and second["reasoning"] == "be better"
    assert second["rejected_siblings"] == [
        {"iteration": 1, "score": 0.4, "val_score": None, "verdict": "no better on minibatch"}
    ]
    assert "+Better." in str(second["diff"]) and str(second["diff"]).startswith("---")


def test_an_old_record_gets_the_same_ids_from_its_iterations() -> None:
    kept = IterationRecord(2, 0.8, 0.7, {}, "Start.\nBetter.", is_best=True)
    versions = prompt_versions(_result([kept]))
    old = {
        "initial_prompt": "Start.",
        "iterations": [
            {"iteration": 1, "system_prompt": "Worse.", "is_best": False},
            {"iteration": 2, "system_prompt": "Start.\nBetter.", "is_best": True},
        ],
    }
    assert [v["id"] for v in record_versions(old)] == [v["id"] for v in versions]
    stored = {"prompt_versions": versions, "initial_prompt": "ignored"}
    assert record_versions(stored) == versions
