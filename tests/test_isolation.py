"""The per-row record (issue 18, item 6; reflex/checks/isolation.py): evaluations.jsonl and
reflections.jsonl, sealed and redacted; ``verify`` proves from them that the test split was
evaluated exactly twice and that selection used val only (a strategy cannot evaluate test rows:
tests/test_context.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import make_rows, responder

from reflex import PromptOptimizer
from reflex.checks.isolation import check_isolation, prompt_id_of
from reflex.cli import build_cli
from reflex.testing import FakeModel, FakeRequest

START = "Classify the sentiment."
SECRET = "sk-live-abcdef0123456789"


def run(tmp_path: Path, **settings: Any) -> Path:
    result = (
        PromptOptimizer()
        .set_dataset(make_rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path)
        .configure(max_iterations=2, **settings)
        .run(START)
    )
    assert result.run_dir is not None
    return Path(result.run_dir)


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def verify(path: Path) -> tuple[int, str]:
    out = CliRunner().invoke(build_cli(), ["verify", str(path)], catch_exceptions=False)
    return out.exit_code, out.output


def test_every_evaluated_row_is_logged_and_verify_proves_the_test_split(tmp_path: Path) -> None:
    FakeModel(responder).install()
    path = run(tmp_path)
    logged = rows(path / "evaluations.jsonl")
    splits = json.loads((path / "splits.json").read_text())
    result = json.loads((path / "result.json").read_text())
    assert set(logged[0]) == {
        "split",
        "label",
        "prompt_id",
        "example_id",
        "model",
        "output",
        "score",
        "error",
        "cached",
    }
    on_test = [r for r in logged if r["split"] == "test"]
    assert sorted(r["label"] for r in on_test) == sorted(
        ["test:baseline", "test:final"] * len(splits["test"])
    )
    final = {r["prompt_id"] for r in on_test if r["label"] == "test:final"}
    assert final == {prompt_id_of(result["best_prompt"])}
    assert {r["example_id"] for r in logged if r["label"].startswith("val:")} <= set(splits["val"])
    code, output = verify(path)
    assert code == 0, output
    line = f"test split isolated: {len(splits['test'])} test rows evaluated exactly twice"
    assert line in output
    # The reasoning calls, with their purpose, request, answer and parse outcome.
    [reflection, *_] = rows(path / "reflections.jsonl")
    assert reflection["purpose"] == "iterative: revise the prompt"
    assert reflection["outcome"] == "ok" and "<prompt>" in reflection["answer"]
    assert reflection["request"][0]["role"] == "system"
    # Both files are covered by the seal.
    seal = json.loads((path / "record.sig.json").read_text())
    assert {"evaluations.jsonl", "reflections.jsonl"} <= set(seal["files"])


def test_verify_fails_when_the_log_is_tampered(tmp_path: Path) -> None:
    FakeModel(responder).install()
    path = run(tmp_path)
    log = path / "evaluations.jsonl"
    logged = rows(log)
    leak = next(r for r in logged if r["split"] == "test")
    logged.append({**leak, "label": "val:it1"})  # a test row used for selection
    log.write_text("".join(json.dumps(r) + "\n" for r in logged), encoding="utf-8")
    code, output = verify(path)
    assert code == 1
    assert "evaluations.jsonl: file" in output or "evaluations.jsonl: line" in output
    assert "test split NOT proven isolated: test rows were evaluated under val:it1" in output
    assert check_isolation(path).ok is False


def test_secrets_are_redacted_from_the_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_API_KEY", SECRET)

    def leaky(request: FakeRequest) -> str:
        if request.model.startswith("fake/reasoner"):
            return responder(request)
        return f"{responder(request)} {SECRET}"

    FakeModel(leaky).install()
    path = run(tmp_path, allow_degenerate_seed=True)  # the secret makes every answer wrong
    for name in ("evaluations.jsonl", "reflections.jsonl"):
        assert SECRET not in (path / name).read_text(encoding="utf-8")
    assert "***" in (path / "evaluations.jsonl").read_text(encoding="utf-8")
