"""Crash-safe resume: SIGKILL a run at random points, resume it, get the uninterrupted result."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows, responder

from reflex import ConfigurationError, PromptOptimizer
from reflex.models.client import load_litellm
from reflex.run.resume import list_runs
from reflex.testing import FakeModel, FakeRequest

START = "Classify the sentiment."
VOLATILE = {"elapsed_s", "run_id", "run_dir"}
STRATEGIES = [
    "iterative",
    "fewshot",
    "instructions",
    "auto",
    "structural",
    "pdo",
    "gepa",
    "opro",
    "random",
    "mipro",  # its TPE study rebuilt from the trials replayed (issue 33)
    "simba",  # samples at a temperature, keyed by seed: replayed from the cache (issue 33)
    "instructions,fewshot,iterative",  # a user's own sequence (issue 33)
    "fewshot+race",  # demo draws raced on growing val rungs (issue 33, item 2)
    "auto+race",
    "mipro+race",  # a round's finalists raced on growing val rungs (issue 33)
]


def builder(run_dir: Path, strategy: str) -> PromptOptimizer:
    strategy, raced = strategy.removesuffix("+race"), strategy.endswith("+race")
    opt = (
        PromptOptimizer()
        .set_dataset(make_rows(40))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy(strategy)
        .set_run_dir(run_dir)
        .configure(max_iterations=4, early_stopping_patience=None, max_workers=4, race=raced)
    )
    if strategy in (
        "iterative",
        "auto",
        "structural",
        "pdo",
        "gepa",
        "opro",
        "random",
        "simba",
    ) or ("iterative" in strategy.split(",")):
        opt.set_reasoning_model("fake/reasoner")
    return opt


def reasoner_variants(request: FakeRequest) -> str:
    """Several distinct proposals, so iterations differ from one another."""
    if request.model == "fake/reasoner":
        n = request.user.count("iteration ")
        if "sampled answers varied" in request.user:  # simba: rules from the contrast
            return f"<rules>- rule {request.user.count('Example ')}</rules>"
        extra = " Answer with one word." if n >= 1 else ""
        return f"<edit>variant {n}</edit><prompt>{START} v{n}.{extra}</prompt>"
    return responder(request)


def comparable(result: Any) -> dict[str, Any]:
    data = result.to_dict()
    for key in VOLATILE:
        data.pop(key, None)
    for record in data["iterations"]:
        record.pop("elapsed_s", None)
    for snapshot in (data["baseline"], data["final"]):
        for sample in snapshot["samples"]:
            sample.pop("cached")  # facts about this process, not about the result
            sample.pop("latency_ms", None)
    return data


def run_killed(
    run_dir: Path,
    strategy: str,
    kill_at: int,
    cli_args: list[str] | None = None,
    build: Callable[[Path], PromptOptimizer] | None = None,
    answer: Callable[[FakeRequest], str] = reasoner_variants,
) -> None:
    """Run in a forked child that SIGKILLs itself when the fake model gets call ``kill_at``
    (``build``: the run's builder, else :func:`builder`'s for ``strategy``; ``answer``: the
    fake model's answers)."""
    load_litellm()  # import once in the parent; the child inherits it
    pid = os.fork()
    if pid == 0:  # child

        def fault(request: FakeRequest, n: int) -> BaseException | None:
            if n >= kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return None

        FakeModel(answer, fault=fault).install()
        try:
            if cli_args is None:
                (build or (lambda d: builder(d, strategy)))(run_dir).run(START)
            else:
                from reflex.cli import main

                main(cli_args)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def cached_rows(run_dir: Path) -> int:
    with sqlite3.connect(run_dir / "cache.sqlite") as db:
        return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_sigkill_then_resume_matches_uninterrupted(strategy: str, tmp_path: Path) -> None:
    reference = FakeModel(reasoner_variants).install()
    expected = builder(tmp_path / "ref", strategy).run(START)
    total_requests = len(reference.requests)
    rng = random.Random(strategy)
    for kill_at in sorted(rng.sample(range(1, total_requests), 3)):
        run_dir = tmp_path / f"kill{kill_at}"
        run_killed(run_dir, strategy, kill_at)
        [run] = list_runs(run_dir)
        assert run.status == "interrupted"
        paid_before = cached_rows(run_dir)
        fake = FakeModel(reasoner_variants).install()
        resumed = builder(run_dir, strategy).run(START, resume=True)
        assert comparable(resumed) == comparable(expected), f"kill at call {kill_at}"
        # Only what the killed process had not finished is paid again.
        assert len(fake.requests) == total_requests - paid_before
        assert list_runs(run_dir)[0].status == "completed"
        events = (run_dir / "runs" / run.run_id / "events.jsonl").read_text()
        iterations = [line for line in events.splitlines() if '"type": "iteration"' in line]
        assert len(iterations) == len(expected.iterations)  # nothing reported twice


def test_resume_refuses_changed_settings(tmp_path: Path) -> None:
    FakeModel(reasoner_variants).install()
    run_killed(tmp_path, "instructions", 30)
    with pytest.raises(ConfigurationError, match="seed: 0 -> 7"):
        builder(tmp_path, "instructions").set_seed(7).run(START, resume=True)
    with pytest.raises(ConfigurationError, match="prompt"):
        builder(tmp_path, "instructions").run(START + " Be brief.", resume=True)
    with pytest.raises(ConfigurationError, match="no unfinished run"):
        builder(tmp_path / "elsewhere", "instructions").run(START, resume=True)


def test_completed_run_cannot_be_resumed(tmp_path: Path) -> None:
    FakeModel(reasoner_variants).install()
    result = builder(tmp_path, "instructions").run(START)
    with pytest.raises(ConfigurationError, match="already completed"):
        builder(tmp_path, "instructions").run(START, resume=str(result.run_id))


def test_cli_resume_runs_and_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from reflex.cli import main

    monkeypatch.chdir(tmp_path)
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_rows(40)), encoding="utf-8")
    prompt = tmp_path / "p.md"
    prompt.write_text(START + "\n", encoding="utf-8")
    args = [
        "optimize",
        str(data),
        str(prompt),
        "-m",
        "fake/task",
        "-s",
        "instructions",
        "--max-iterations",
        "4",
        "--max-workers",
        "4",
    ]
    run_killed(tmp_path, "instructions", 25, cli_args=args)
    FakeModel(reasoner_variants).install()
    with pytest.raises(SystemExit) as done:
        main(["runs", "--json"])
    [row] = json.loads(capsys.readouterr().out)
    assert done.value.code == 0 and row["status"] == "interrupted"
    with pytest.raises(SystemExit) as done:
        main([*args, "--seed", "5", "--resume"])
    assert done.value.code == 2 and "seed: 0 -> 5" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        main([*args, "--resume-from", row["id"]])
    assert done.value.code == 0
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["runs", "--json"])
    [row] = json.loads(capsys.readouterr().out)
    assert row["status"] == "completed" and row["final"] is not None


def test_cli_show_prints_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from reflex.cli import main

    monkeypatch.chdir(tmp_path)
    FakeModel(reasoner_variants).install()
    result = builder(tmp_path / ".reflex", "iterative").run(START)
    assert result.best_prompt != START
    with pytest.raises(SystemExit) as done:
        main(["show", str(result.run_id)[:17]])
    out = capsys.readouterr().out
    assert done.value.code == 0 and "completed" in out
    assert f"-{START}" in out and "+" + result.best_prompt.splitlines()[0] in out
    with pytest.raises(SystemExit) as done:
        main(["show", "nope"])
    assert done.value.code == 2 and "no run matching 'nope'" in capsys.readouterr().err
