"""The HTML report of a run: candidates with their outcomes, prompt version ids, all escaped."""

from __future__ import annotations

from typing import Any

from test_report import _Page

from reflex.cli.report_html import render_report


def test_report_shows_rejected_and_failed_candidates() -> None:
    iteration = {"iteration": 1, "score": 0.2, "val_score": None, "system_prompt": "p <i>"}
    result: dict[str, Any] = {
        "initial_prompt": "p",
        "best_prompt": "p",
        "iterations": [
            {**iteration, "rejected": "guard <len> regressed"},
            {**iteration, "iteration": 2, "failed": "ProviderError: boom"},
        ],
    }
    page = _Page()
    page.feed(render_report(result))
    text = "".join(page.text)
    assert "guard <len> regressed" in text and "ProviderError: boom" in text
    assert "i" not in page.tags
    assert {"card rejected", "card failed"} <= set(page.classes)


def test_report_version_ids_are_escaped_and_derived_for_old_records() -> None:
    evil = '"><i>x</i>'
    result: dict[str, Any] = {
        "initial_prompt": "p",
        "best_prompt": "q",
        "iterations": [{"iteration": 1, "system_prompt": "q", "is_best": True}],
        "prompt_versions": [
            {"id": "root" + evil, "iteration": 0, "text": "p"},
            {"id": "v1" + evil, "parent": "root" + evil, "iteration": 1, "text": "q"},
        ],
    }
    page = _Page()
    page.feed(render_report(result))
    assert "i" not in page.tags
    assert {"v1" + evil, "root" + evil} <= {v for k, v in page.attrs if k == "title"}
    # A record written before prompt_versions: the same ids, derived as reflex.checks.versions does.
    from reflex.checks.versions import version_id

    del result["prompt_versions"]
    page = _Page()
    page.feed(render_report(result))
    root = version_id(None, "p")
    assert {root, version_id(root, "q")} <= {v for k, v in page.attrs if k == "title"}
