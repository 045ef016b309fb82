"""Every example in examples/ runs, on the fake model (no local model, no network).

Each ``examples/<name>/run.py`` is run with ``-m fake/task``. The fake answers with the
reference on every third row, and on every row once the prompt is longer than the example's
``prompt.md`` or brings demos as chat turns (any edit helps), so the seed is not degenerate and
an iteration can gain.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from reflex.data.dataset import load_dataset
from reflex.testing import FakeModel, FakeRequest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
RUN_SCRIPTS = sorted(EXAMPLES.glob("*/run.py"))


def _load(script: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{script.parent.name}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _responder(dataset: Path, seed: str) -> Callable[[FakeRequest], str]:
    rows = load_dataset(dataset)  # any row schema: plain, chat, tool calls
    ideal = {row.input: str(row.ideal) for row in rows}
    position = {row.input: i for i, row in enumerate(rows)}

    def respond(request: FakeRequest) -> str:
        edited = len(request.system) > len(seed) or len(request.messages) > 2
        if edited or position.get(request.user, 1) % 3 == 0:
            return ideal.get(request.user, "?")
        return "I am not sure."

    return respond


def test_every_example_directory_has_a_run_script() -> None:
    datasets = {path.parent for path in EXAMPLES.glob("*/dataset.jsonl")}
    assert datasets and datasets <= {script.parent for script in RUN_SCRIPTS}


@pytest.mark.parametrize("script", RUN_SCRIPTS, ids=lambda p: p.parent.name)
def test_example_runs_on_the_fake_model(
    script: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = _load(script)
    seed = (script.parent / "prompt.md").read_text(encoding="utf-8").strip()
    fake = FakeModel(_responder(module.DATASET, seed)).install()
    result = module.main(
        ["-m", "fake/task", "--max-iterations", "2", "--run-dir", str(tmp_path / ".reflex")]
    )
    assert result.completed and result.iterations
    assert result.baseline is not None and result.final is not None
    assert result.final.mean_score > result.baseline.mean_score
    assert {request.model for request in fake.requests} == {"fake/task"}
    assert "test score" in capsys.readouterr().out
