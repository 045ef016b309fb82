"""A run killed after its baseline, before its first checkpoint, resumes without a second
baseline in the record (issue 18, item 6).

Such a run has no checkpoint.json, so ``--resume`` used to start it over outside replay mode: it
logged its preflight and its test baseline a second time, with no ``resumed`` event, and
``aevyra-reflex verify RUN`` then said the test rows were not evaluated exactly once. Now the
evaluations the record already holds are replayed from the response cache (no paid call) and
not logged again; the ``resumed`` event marks where the record continues. The kill is a real
SIGKILL, sent by the run's own ``on_baseline`` callback: after the baseline rows are written and
before the baseline checkpoint is.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from conftest import make_rows, responder

from reflex import PromptOptimizer
from reflex.checks.isolation import check_isolation
from reflex.cli import build_cli
from reflex.models.client import load_litellm
from reflex.result import EvalSnapshot, RunEnd
from reflex.run.resume import list_runs
from reflex.testing import FakeModel

START = "Classify the sentiment."


def builder(run_dir: Path) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows(30))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(run_dir)
        .configure(max_iterations=2)
    )


class KillAfterBaseline:
    """SIGKILLs the process once the baseline is measured (its rows are already logged)."""

    def on_baseline(self, snapshot: EvalSnapshot) -> None:
        os.kill(os.getpid(), signal.SIGKILL)


def killed_after_baseline(run_dir: Path) -> Path:
    load_litellm()  # import once in the parent; the child inherits it
    pid = os.fork()
    if pid == 0:  # child
        try:
            FakeModel(responder).install()
            builder(run_dir).run(START, callbacks=[KillAfterBaseline()])
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    [run] = list_runs(run_dir)
    assert run.status == "interrupted"
    return run.path


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (path / "evaluations.jsonl").read_text().splitlines()]


def verify(path: Path) -> tuple[int, str]:
    out = CliRunner().invoke(build_cli(), ["verify", str(path)], catch_exceptions=False)
    return out.exit_code, out.output


def test_a_resume_without_checkpoint_replays_the_baseline_and_verify_passes(
    tmp_path: Path,
) -> None:
    path = killed_after_baseline(tmp_path)
    assert not (path / "checkpoint.json").exists()  # killed before its first checkpoint
    splits = json.loads((path / "splits.json").read_text())
    before = [r for r in rows(path) if r["label"] == "test:baseline"]
    assert sorted(r["example_id"] for r in before) == sorted(splits["test"])

    fake = FakeModel(responder).install()
    result = builder(tmp_path).run(START, resume=True)
    assert result.end_state is RunEnd.SUCCEEDED and result.baseline is not None
    # No second paid pass: the baseline's answers come from the run's cache.
    test_inputs = {r["input"] for r in make_rows(30) if r["id"] in set(splits["test"])}
    asked = [r for r in fake.requests if r.system == START and r.user in test_inputs]
    assert asked == []
    # ... and no second log of it: each test row once under test:baseline, once under test:final.
    logged = rows(path)
    for label in ("test:baseline", "test:final", "train:preflight"):
        ids = [r["example_id"] for r in logged if r["label"] == label]
        assert len(ids) == len(set(ids)), f"{label} logged twice"
    events = [json.loads(line) for line in (path / "events.jsonl").read_text().splitlines()]
    assert [e["after_iteration"] for e in events if e["type"] == "resumed"] == [0]
    code, output = verify(path)
    assert code == 0, output
    assert f"test split isolated: {len(splits['test'])} test rows evaluated" in output


def test_a_tampered_log_of_such_a_run_still_fails(tmp_path: Path) -> None:
    path = killed_after_baseline(tmp_path)
    FakeModel(responder).install()
    builder(tmp_path).run(START, resume=True)
    clean = (path / "evaluations.jsonl").read_text()
    logged = rows(path)
    baseline = next(r for r in logged if r["label"] == "test:baseline")
    for tampered, problem in (
        ({**baseline, "label": "val:it1"}, "test rows were evaluated under val:it1"),
        ({**baseline, "prompt_id": "0" * 16}, "test:baseline evaluated prompt(s)"),
    ):
        (path / "evaluations.jsonl").write_text(clean + json.dumps(tampered) + "\n")
        code, output = verify(path)
        assert code == 1 and problem in output, output
        assert check_isolation(path).ok is False
