"""The racing evaluator (strategies/_race.py, issue 33 item 2): candidates scored on growing val
minibatches, the same rows for each, the clearly worse dropped after a rung and recorded as
such, through the run's real evaluation path (FakeModel behind LiteLLM)."""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
from pathlib import Path
from typing import Any, ClassVar

import pytest
import wandb
from mlflow import MlflowClient
from pydantic import BaseModel, ConfigDict
from test_resume import cached_rows, comparable
from wandb_reader import load_run

from reflex import PromptOptimizer
from reflex.api import Example, RunEnd, StrategyContext, hookimpl
from reflex.checks.maxstat import best_of_many
from reflex.cli.report_html import render_report
from reflex.models.client import load_litellm
from reflex.testing import FakeModel, FakeRequest
from reflex_mlflow import MLflowCallback
from reflex_strategies._race import Candidate, RaceResult, race, race_rows
from reflex_wandb import WandbCallback

START = "Classify the review."
GOOD = "Classify the review. GOOD"  # right on every row
BAD = "Classify the review. BAD"  # wrong on every row
FRONT = "Classify the review. FRONT"  # right on the first rung's rows only
TRAP = "Classify the review. TRAP"  # wrong on the first rung's rows, right on every other
LABELS = ("positive", "negative")
ROWS = [
    {"id": f"r{i:03d}", "input": f"review {i}: film", "ideal": LABELS[i % 2]} for i in range(100)
]
IDEAL = {row["input"]: row["ideal"] for row in ROWS}
IDEAL_BY_ID = {row["id"]: row["input"] for row in ROWS}
SEEN: dict[str, Any] = {}


def answer(request: FakeRequest) -> str:
    ideal = IDEAL.get(request.user, "unknown")
    wrong = LABELS[1 - LABELS.index(ideal)] if ideal in LABELS else "unknown"
    first = SEEN.get("first_rung", set())
    if "GOOD" in request.system:
        return ideal
    if "BAD" in request.system:
        return wrong
    if "FRONT" in request.system:
        return ideal if request.user in first else wrong
    if "TRAP" in request.system:
        return wrong if request.user in first else ideal
    index = int(request.user.split()[1].rstrip(":"))
    return ideal if index % 3 == 0 else wrong  # the initial prompt: every third row


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Racer:
    """Races the module's CANDIDATES once; keeps the RaceResult in SEEN."""

    name: ClassVar[str] = "racer"
    Options: ClassVar[type[BaseModel]] = _Options
    requires_reasoning_model: ClassVar[bool] = False
    derives_from_data: ClassVar[bool] = False
    auto_eligible: ClassVar[bool] = False

    def __init__(self, options: BaseModel) -> None:
        self.options = options

    def optimize(self, ctx: StrategyContext) -> None:
        rungs = race_rows(list(ctx.val), ctx.settings.seed)
        SEEN["rungs"] = [[e.id for e in rows] for rows in rungs]
        SEEN["first_rung"] = {e.input for e in rungs[0]}
        SEEN["left"] = ctx.budget.remaining_calls
        SEEN["result"] = race(ctx, [Candidate(p, reasoning=p) for p in SEEN["candidates"]])


class _Plugin:
    @hookimpl
    def register_strategies(self, register: Any) -> None:
        register(_Racer)


@pytest.fixture
def racer(register_plugin: Any) -> None:
    register_plugin(_Plugin(), name="racer")
    SEEN.clear()


def build(run_dir: Path, candidates: list[str], **settings: Any) -> PromptOptimizer:
    SEEN["candidates"] = candidates
    return (
        PromptOptimizer()
        .set_dataset(ROWS)
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("racer")
        .set_run_dir(run_dir)
        .configure(early_stopping_patience=None, max_workers=4, **settings)
    )


def asked(fake: FakeModel, prompt: str) -> list[str]:
    """The val inputs the task model was sent under ``prompt`` (not the train minibatch, nor
    the final test measurement)."""
    val = {IDEAL_BY_ID[i] for i in SEEN["rungs"][-1]}
    return [r.user for r in fake.requests if r.system == prompt and r.user in val]


@pytest.mark.usefixtures("racer")
def test_a_worse_candidate_is_dropped_after_the_first_rung_and_its_calls_stop(
    tmp_path: Path,
) -> None:
    fake = FakeModel(answer).install()
    result = build(tmp_path, [GOOD, BAD]).run(START)
    race_result: RaceResult = SEEN["result"]
    first = SEEN["rungs"][0]
    assert len(SEEN["rungs"][-1]) == 20 and len(first) == 5  # a quarter of 20 val rows
    [bad] = [r for r in result.iterations if r.system_prompt == BAD]
    assert bad.race is not None and bad.race["dropped"] and bad.race["rung"] == 1
    assert bad.race["rows"] == first and bad.race["score"] == 0.0
    assert bad.race["leader"] == "candidate 0" and bad.race["p"] < 0.1
    assert bad.rejected is not None and bad.rejected.startswith("dropped by the race at rung 1")
    assert "placed" not in bad.rejected  # dropped by the paired test, not by halving
    assert bad.val_score is None and not bad.is_best
    # BAD's calls stop at the first rung: 5 rows, never the other 15.
    assert sorted(asked(fake, BAD)) == sorted(IDEAL_BY_ID[i] for i in first)
    # GOOD ran every rung and was measured on all 20 val rows (each row paid once).
    assert sorted(asked(fake, GOOD)) == sorted(IDEAL_BY_ID[i] for i in SEEN["rungs"][-1])
    [good] = [r for r in result.iterations if r.system_prompt == GOOD]
    assert good.is_best and good.val_score == 1.0 and result.best_prompt == GOOD
    assert good.race is not None and not good.race["dropped"] and good.race["rung"] == 3
    assert [e.dropped for e in race_result.entries] == [False, True]
    assert race_result.rungs == (5, 10, 20)


@pytest.mark.usefixtures("racer")
def test_a_dropped_candidate_never_becomes_the_best(tmp_path: Path) -> None:
    # TRAP is wrong on the first rung's rows and right on the other 15: on all 20 val rows it
    # would be the best (0.75), but FRONT leads the first rung 5-0 and TRAP is dropped there.
    fake = FakeModel(answer).install()
    result = build(tmp_path, [FRONT, TRAP]).run(START)
    [trap] = [r for r in result.iterations if r.system_prompt == TRAP]
    assert trap.race is not None and trap.race["dropped"] and trap.race["rung"] == 1
    assert not trap.is_best and trap.val_score is None
    assert result.best_prompt != TRAP and all(TRAP not in str(v) for v in result.prompt_versions)
    assert len(asked(fake, TRAP)) == 5
    # FRONT survives and is measured on all rows (0.25): below the initial prompt, not kept.
    [front] = [r for r in result.iterations if r.system_prompt == FRONT]
    assert front.val_score == 0.25 and not front.is_best
    assert result.best_prompt == START


@pytest.mark.usefixtures("racer")
def test_the_best_of_many_correction_counts_the_dropped_candidates(tmp_path: Path) -> None:
    FakeModel(answer).install()
    result = build(tmp_path, [GOOD, BAD]).run(START)
    [good] = [r for r in result.iterations if r.system_prompt == GOOD]
    selection = result.selection
    assert selection is not None and selection["iteration"] == good.iteration
    # k counts BAD, dropped at the first rung (seen on 5 val rows only), beside GOOD.
    assert selection["k"] == 2 and selection["seen"] == 1
    # GOOD against the initial prompt (right on every third row) on the 20 val rows, alone:
    initial = {f"{i}@fake/task": float(int(i[1:]) % 3 == 0) for i in SEEN["rungs"][-1]}
    alone = best_of_many([{key: 1.0 - s for key, s in initial.items()}], 0, alpha=0.1)
    assert alone.k == 1 and selection["diff"] == pytest.approx(alone.diff)
    # BAD differs from the initial prompt on some of its 5 rows: chance reaches further.
    assert selection["bound"] > alone.bound


@pytest.mark.usefixtures("racer")
def test_the_race_lands_in_the_trackers_and_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real stores: a sqlite MLflow store read back with MlflowClient, an offline W&B run read
    back from its .wandb file; and the HTML report of the run's result.json."""
    monkeypatch.chdir(tmp_path)
    for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.setenv(name, str(tmp_path / "wandb-home" / name.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    FakeModel(answer).install()
    mlflow_cb = MLflowCallback(tracking_uri=uri)
    wandb_cb = WandbCallback(mode="offline", dir=str(tmp_path), log_prompt_each_iter=True)
    result = build(tmp_path / "runs", [GOOD, BAD]).run(START, callbacks=[mlflow_cb, wandb_cb])
    [bad] = [r.iteration for r in result.iterations if r.system_prompt == BAD]
    [good] = [r.iteration for r in result.iterations if r.system_prompt == GOOD]
    expected = {  # BAD dropped at rung 1 of 3 (5 val rows), GOOD through all 20 rows
        "race_dropped": {bad: 1.0, good: 0.0},
        "race_rung": {bad: 1.0, good: 3.0},
        "race_rows": {bad: 5.0, good: 20.0},
        "race_score": {bad: 0.0, good: 1.0},
    }
    client = MlflowClient(tracking_uri=uri)
    run_id = str(mlflow_cb.run_id)
    for name, values in expected.items():
        assert {m.step: m.value for m in client.get_metric_history(run_id, name)} == values
    p = {m.step: m.value for m in client.get_metric_history(run_id, "race_p")}
    assert p[bad] < 0.1 and p[good] == 1.0  # the leader's p over it; GOOD led every rung
    table = json.loads(Path(client.download_artifacts(run_id, "iterations.json")).read_text())
    races = dict(zip(table["columns"], zip(*table["data"], strict=True), strict=True))["race"]
    assert "dropped at rung 1/3: 0.000 on 5 val rows" in races
    wandb.teardown()
    stored = load_run(str(Path(wandb_cb.run.settings.sync_dir)))
    for name, values in expected.items():
        rows = {row["iteration"]: row[name] for row in stored["history"] if name in row}
        assert rows == values, name
    html = render_report(json.loads(Path(str(result.run_dir), "result.json").read_text()))
    section = html[html.index("Racing: candidates dropped early") :]
    assert f"<td>1</td><td>{bad}</td><td>1 of 3</td><td>5</td><td>0.000</td>" in section
    assert "<td>dropped</td>" in section and "survived: val 1.000" in section


@pytest.mark.usefixtures("racer")
def test_the_rung_rows_are_paired_and_grow(tmp_path: Path) -> None:
    fake = FakeModel(answer).install()
    build(tmp_path, [GOOD, FRONT, START + " again"]).run(START)
    rungs = SEEN["rungs"]
    for smaller, larger in itertools.pairwise(rungs):
        assert larger[: len(smaller)] == smaller  # each rung is a prefix of the next
    # Every candidate was sent the first rung's rows: the same rows, so comparisons pair.
    first = {IDEAL_BY_ID[i] for i in rungs[0]}
    for prompt in (GOOD, FRONT, START + " again"):
        assert first <= set(asked(fake, prompt))
    entries = SEEN["result"].entries
    assert {tuple(e.rows) for e in entries if e.rung == 1} <= {tuple(rungs[0])}


def test_race_rows_are_drawn_by_the_seed() -> None:
    val = [Example(f"v{i}", f"input {i}", "x") for i in range(40)]
    a, b, c = race_rows(val, 0), race_rows(val, 0), race_rows(val, 1)
    assert [len(r) for r in a] == [10, 20, 40]
    assert [[e.id for e in r] for r in a] == [[e.id for e in r] for r in b]
    assert [e.id for e in a[0]] != [e.id for e in c[0]]
    assert [len(r) for r in race_rows(val[:6], 0)] == [4, 6]  # a first rung of at least 4 rows


def before_race(tmp_path: Path) -> int:
    """Calls a run of ROWS pays before its race starts (a --max-calls run: no train scores)."""
    FakeModel(answer).install()
    probe = 1000
    build(tmp_path / "probe", [GOOD]).set_budget(max_calls=probe).run(START)
    return probe - int(SEEN["left"])


@pytest.mark.usefixtures("racer")
def test_the_budget_holds_mid_race(tmp_path: Path) -> None:
    # 30 calls left as the race starts (20 val rows, rungs of 5, 10, 20): the first rung of the
    # three candidates (15; the incumbent's rows are cached); BAD is dropped by the test; the
    # 15 left pay the second rung of one candidate and its last 10 rows, not two: FRONT (tied
    # with GOOD, later) is dropped for the budget, recorded with its first-rung score.
    limit = before_race(tmp_path) + 30
    fake = FakeModel(answer).install()
    result = build(tmp_path / "cut", [GOOD, FRONT, BAD]).set_budget(max_calls=limit).run(START)
    assert SEEN["left"] == 30
    assert result.usage["task"]["calls"] <= limit
    assert len(asked(fake, FRONT)) == len(asked(fake, BAD)) == 5  # the first rung only
    races = [(r.system_prompt, r.race["rung"], r.race["dropped"]) for r in result.iterations]
    assert races == [(BAD, 1, True), (FRONT, 1, True), (GOOD, 3, False)]
    front = result.iterations[1]
    assert front.rejected is not None and "the calls left (15) take 1 candidate(s) on" in (
        front.rejected
    )
    assert result.best_prompt == GOOD and result.iterations[2].val_score == 1.0


@pytest.mark.usefixtures("racer")
def test_a_race_the_budget_cannot_finish_is_not_started(tmp_path: Path) -> None:
    # 19 calls left: one candidate's 20 val rows do not fit; nothing of the race is paid.
    limit = before_race(tmp_path) + 19
    fake = FakeModel(answer).install()
    result = build(tmp_path / "cut", [GOOD, BAD, FRONT]).set_budget(max_calls=limit).run(START)
    assert SEEN["left"] == 19
    assert result.end_state == RunEnd.PAUSED_BUDGET and result.iterations == []
    assert not [r for r in fake.requests if r.system in (GOOD, BAD, FRONT)]
    assert result.best_prompt == START


def run_killed(run_dir: Path, candidates: list[str], kill_at: int) -> None:
    """The race in a forked child that SIGKILLs itself at the fake model's call ``kill_at``."""
    load_litellm()  # import once in the parent; the child inherits it
    pid = os.fork()
    if pid == 0:  # child

        def fault(request: FakeRequest, n: int) -> BaseException | None:
            if n >= kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return None

        FakeModel(answer, fault=fault).install()
        try:
            build(run_dir, candidates).run(START)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


@pytest.mark.usefixtures("racer")
def test_a_raced_run_killed_and_resumed_gives_the_same_record(tmp_path: Path) -> None:
    candidates = [GOOD, BAD, FRONT, TRAP]
    reference = FakeModel(answer).install()
    expected = build(tmp_path / "ref", candidates).run(START)
    # BAD and TRAP dropped at the first rung, FRONT at the second (GOOD leads 10-5), GOOD kept.
    races = [(r.system_prompt, r.race["rung"], r.race["dropped"]) for r in expected.iterations]
    assert races == [(BAD, 1, True), (TRAP, 1, True), (FRONT, 2, True), (GOOD, 3, False)]
    total = len(reference.requests)
    for kill_at in sorted(random.Random("race").sample(range(1, total), 3)):
        run_dir = tmp_path / f"kill{kill_at}"
        run_killed(run_dir, candidates, kill_at)
        paid_before = cached_rows(run_dir)
        fake = FakeModel(answer).install()
        resumed = build(run_dir, candidates).run(START, resume=True)
        assert comparable(resumed) == comparable(expected), f"kill at call {kill_at}"
        assert len(fake.requests) == total - paid_before  # only the unfinished is paid again


@pytest.mark.usefixtures("racer")
def test_ties_are_halved_each_rung_so_a_candidate_costs_half_a_pass(tmp_path: Path) -> None:
    # Four candidates right on every row: the test drops none (no row differs), the race keeps
    # the better half of each rung's entrants (ties: the earlier), so 4 cost 2 val passes.
    fake = FakeModel(answer).install()
    tied = [f"{GOOD} {i}" for i in range(4)]
    result = build(tmp_path, tied).run(START)
    races = [(r.system_prompt, r.race["rung"], r.race["dropped"]) for r in result.iterations]
    assert races == [
        (tied[2], 1, True),
        (tied[3], 1, True),
        (tied[1], 2, True),
        (tied[0], 3, False),
    ]
    assert "placed 3 of 4, 2 go on" in str(result.iterations[0].rejected)
    assert [len(asked(fake, p)) for p in tied] == [20, 10, 5, 5]  # 40 calls: two val passes
