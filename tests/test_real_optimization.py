"""A short reasoning-free optimization on the real embedded model (marked real_model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reflex import PromptOptimizer

pytestmark = pytest.mark.real_model
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_instructions_improve_val_on_arithmetic(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    rows = [json.loads(line) for line in (EXAMPLES / "arithmetic/dataset.jsonl").open()][:40]
    result = (
        PromptOptimizer()
        .set_dataset(rows, name="arithmetic-40")
        .add_provider("local/qwen2.5-coder-0.5b")
        .add_metric("exact_match")
        .set_strategy("instructions")
        .configure(max_iterations=2, max_tokens=16, max_workers=1)
        .set_run_dir(tmp_path)
        .run((EXAMPLES / "arithmetic/prompt.md").read_text())
    )
    lines = Path(str(result.run_dir), "events.jsonl").read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    baseline_val = next(e["mean_score"] for e in events if e.get("label") == "val:baseline")
    assert result.best_score_val is not None and result.best_score_val > baseline_val
    assert result.final is not None and result.baseline is not None
    assert result.final.system_prompt == result.best_prompt != result.initial_prompt
    assert result.final.mean_score > result.baseline.mean_score
    assert result.usage["task"]["calls"] <= 60
