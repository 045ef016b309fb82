"""The acceptance gate on the fake model (reflex.run.acceptance): a candidate replaces the best
prompt on evidence, every measured candidate records it, and a winner is corrected for having
been picked from many; a label task's candidates are checked against the constant answer."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import ANSWERS, KEYWORD, make_rows
from pydantic import BaseModel, ConfigDict
from test_resume import comparable  # the result without what differs per process

from reflex import ConfigurationError, PromptOptimizer
from reflex.api import StrategyContext, hookimpl
from reflex.cli.report_html import render_report
from reflex.config import default
from reflex.models.client import load_litellm
from reflex.models.tokens import count_tokens
from reflex.run.acceptance import Gate
from reflex.testing import FakeModel, FakeRequest

START = "Classify the sentiment."


def _flip(label: str) -> str:
    return "negative" if label == "positive" else "positive"


def answer(request: FakeRequest) -> str:
    """Right on rows i % 3 == 0 (the other label elsewhere); ``FIX i j`` also right on those
    rows, ``GOOD`` right unless i % 4 == 0, the keyword everywhere; ``ALWAYS``: "positive" on
    every row; ``BOTH``: both labels at once (what ``contains`` scores 1 everywhere)."""
    ideal = ANSWERS[request.user]
    index = int(request.user.split()[1].rstrip(":"))
    system = request.system
    if "ALWAYS" in system:
        return "positive"
    if "BOTH" in system:
        return "positive negative"
    fixed = {int(n) for group in re.findall(r"FIX ([\d ]+)", system) for n in group.split()}
    if KEYWORD in system or index in fixed or index % 3 == 0:
        return ideal
    if "GOOD" in system and index % 4 != 0:
        return ideal
    return _flip(ideal)


class ListedOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompts: list[str] = []


class ListedStrategy:
    """Records the given candidates, in order."""

    name: ClassVar[str] = "listed"
    Options: ClassVar[type[BaseModel]] = ListedOptions
    requires_reasoning_model: ClassVar[bool] = False

    def __init__(self, options: BaseModel) -> None:
        assert isinstance(options, ListedOptions)
        self.options = options

    def optimize(self, ctx: StrategyContext) -> None:
        for prompt in self.options.prompts:
            if ctx.should_stop:
                return
            ctx.record_iteration(prompt, None)


class ListedPlugin:
    @hookimpl
    def register_strategies(self, register: Any) -> None:
        register(ListedStrategy)


@pytest.fixture(autouse=True)
def _listed(register_plugin: Any) -> None:
    register_plugin(ListedPlugin(), name="listed-plugin")


def builder(
    run_dir: Path,
    prompts: list[str],
    accept: str | None,
    rows: int = 30,
    metric: str = "exact_match",
) -> PromptOptimizer:
    opt = (
        PromptOptimizer()
        .set_dataset(make_rows(rows))
        .add_provider("fake", "task")
        .add_metric(metric)
        .set_strategy("listed", prompts=prompts)
        .set_run_dir(run_dir)
        .configure(max_iterations=max(1, len(prompts)), early_stopping_patience=None)
    )
    return opt if accept is None else opt.set_accept(accept)


def val_indices(run_dir: Path, rows: int = 30) -> list[int]:
    """The val rows' indices of a run's split (the same for the same data and seed)."""
    FakeModel(answer).install()
    result = builder(run_dir, [], "any", rows).configure(max_iterations=0).run(START)
    splits = json.loads((Path(str(result.run_dir)) / "splits.json").read_text(encoding="utf-8"))
    return sorted(int(i[1:]) for i in splits["val"])


def one_wrong_val_row(tmp_path: Path) -> int:
    return next(i for i in val_indices(tmp_path / "split") if i % 3 != 0)


def test_the_default_rule_is_read_from_the_field() -> None:
    assert default("accept") == "any"  # the rule that measured best (docs/selection.md)
    assert PromptOptimizer().set_accept("margin:0.02")._config.accept == "margin:0.02"


@pytest.mark.parametrize("bad", ["sometimes", "margin", "significant:2", "margin:x", "any:1"])
def test_a_bad_rule_is_one_clear_error(bad: str) -> None:
    with pytest.raises(ConfigurationError, match=r"significant, significant:0.1, margin:0.02"):
        PromptOptimizer().set_accept(bad)


def test_the_gate_refuses_a_one_row_win(tmp_path: Path) -> None:
    row = one_wrong_val_row(tmp_path)
    FakeModel(answer).install()
    result = builder(tmp_path / "run", [f"{START} FIX {row}"], "significant").run(START)
    [record] = result.iterations
    assert record.val_score is not None and result.best_score_val is not None
    assert record.val_score == pytest.approx(result.best_score_val + 1 / 6)  # one more row of 6
    assert not record.is_best and not record.accepted
    assert result.best_prompt == START
    assert record.evidence is not None
    assert record.evidence["p"] == pytest.approx(0.5) and record.evidence["passed"] is False
    assert "paired test" in record.evidence["reason"]


def test_any_keeps_todays_behaviour(tmp_path: Path) -> None:
    row = one_wrong_val_row(tmp_path)
    FakeModel(answer).install()
    result = builder(tmp_path / "run", [f"{START} FIX {row}"], "any").run(START)
    [record] = result.iterations
    assert record.is_best and record.accepted
    assert result.best_prompt == f"{START} FIX {row}"
    assert result.selection is not None and result.selection["kept"]  # reported, not applied


@pytest.mark.parametrize(("margin", "kept"), [("margin:0.2", False), ("margin:0.1", True)])
def test_a_margin_in_score_units(tmp_path: Path, margin: str, kept: bool) -> None:
    row = one_wrong_val_row(tmp_path)
    FakeModel(answer).install()
    result = builder(tmp_path / "run", [f"{START} FIX {row}"], margin).run(START)
    assert result.iterations[0].is_best is kept


def test_a_clear_win_is_accepted_with_its_evidence(tmp_path: Path) -> None:
    FakeModel(answer).install()
    result = builder(tmp_path, [f"{START} {KEYWORD}"], "significant", rows=60).run(START)
    [record] = result.iterations
    assert record.is_best and result.best_prompt == f"{START} {KEYWORD}"
    evidence = record.evidence
    assert evidence is not None
    assert evidence["rule"] == "significant" and evidence["against"] == 0
    assert evidence["rows"] == 12 and evidence["passed"] is True
    assert evidence["p"] < 0.1 and 0.5 < evidence["diff"] <= 1.0
    assert evidence["label"]["beats_constant"] is True
    assert (
        result.selection is not None and result.selection["survived"] and result.selection["kept"]
    )
    assert result.selection["k"] == 1


def test_the_incumbent_is_the_last_kept_candidate(tmp_path: Path) -> None:
    FakeModel(answer).install()
    prompts = [f"{START} GOOD", f"{START} {KEYWORD}", f"{START} FIX 1"]
    result = builder(tmp_path, prompts, "significant", rows=60).run(START)
    against = [r.evidence["against"] for r in result.iterations if r.evidence]
    assert [r.is_best for r in result.iterations][:1] == [True]
    assert against[0] == 0 and against[2] == max(
        r.iteration for r in result.iterations[:2] if r.is_best
    )


def test_a_winner_that_does_not_survive_best_of_many_gives_the_initial_prompt_back(
    tmp_path: Path,
) -> None:
    wrong = [i for i in val_indices(tmp_path / "split", 60) if i % 3 != 0]
    assert len(wrong) >= 7
    picks = list(itertools.combinations(wrong[:7], 5))  # wrong[:5] first; ties after it
    prompts = [f"{START} FIX {' '.join(map(str, p))}" for p in picks]
    FakeModel(answer).install()
    result = builder(tmp_path / "run", prompts, "significant", rows=60).run(START)
    first = result.iterations[0]
    assert first.is_best and first.evidence is not None and first.evidence["p"] < 0.1
    selection = result.selection
    assert selection is not None and selection["k"] == len(prompts)
    assert selection["p"] >= 0.1 and not selection["kept"]
    assert result.best_prompt == START  # the prompt whose test score is printed
    assert [w["kind"] for w in result.warnings if w["kind"].startswith("selection")] == [
        "selection_not_kept"
    ]
    any_rule = builder(tmp_path / "any", prompts, "any", rows=60).run(START)
    assert any_rule.best_prompt == prompts[0] and any_rule.selection is not None
    assert not any_rule.selection["survived"] and any_rule.selection["kept"]


def test_a_candidate_that_does_not_beat_the_constant_never_replaces_one_that_does(
    tmp_path: Path,
) -> None:
    val = val_indices(tmp_path / "split", 60)
    majority = max(sum(1 for i in val if i % 2 == 0), sum(1 for i in val if i % 2 == 1))
    right, wrong = [i for i in val if i % 3 == 0], [i for i in val if i % 3 != 0]
    fixed = wrong[: majority + 1 - len(right)]  # one row above the constant answer
    prompts = [f"{START} FIX {' '.join(map(str, fixed))}", f"{START} BOTH"]
    FakeModel(answer).install()  # contains scores BOTH 1.0 on every row: a label-free hack
    result = builder(tmp_path / "gate", prompts, "margin:0.05", rows=60, metric="contains").run(
        START
    )
    incumbent, both = result.iterations
    assert incumbent.is_best and both.val_score == 1.0 and not both.is_best
    assert both.evidence is not None and both.evidence["diff"] >= 0.05
    assert "constant answer" in both.evidence["reason"]
    assert both.evidence["label"]["beats_constant"] is False
    assert incumbent.evidence is not None and incumbent.evidence["label"]["beats_constant"]
    legacy = builder(tmp_path / "any", prompts, "any", rows=60, metric="contains").run(START)
    assert legacy.iterations[1].is_best  # any: today's behaviour, no preference


def test_a_collapsed_winner_is_flagged(tmp_path: Path) -> None:
    FakeModel(answer).install()
    result = builder(tmp_path, [f"{START} ALWAYS"], "any", rows=60).run(START)
    assert result.best_prompt == f"{START} ALWAYS"
    check = result.label_check
    assert check is not None and check["trivial"] and check["collapsed"] == "positive"
    assert check["beats_constant"] is False
    assert check["accuracy"] == pytest.approx(check["constant"])
    assert "trivial_winner" in [w["kind"] for w in result.warnings]
    page = render_report(result.to_dict())
    assert "Acceptance evidence and the constant answer" in page
    assert "does NOT beat it" in page and "collapsed onto" in page


def test_a_prompt_that_reads_the_inputs_is_not_flagged(tmp_path: Path) -> None:
    FakeModel(answer).install()
    result = builder(tmp_path, [f"{START} {KEYWORD}"], "any", rows=60).run(START)
    check = result.label_check
    assert check is not None and not check["trivial"] and check["beats_constant"]
    assert not [w for w in result.warnings if w["kind"] in ("trivial_winner", "off_label_answers")]


def test_answers_outside_the_label_set_are_counted_on_test(tmp_path: Path) -> None:
    def near(request: FakeRequest) -> str:
        return ANSWERS[request.user] + "s"  # "positives": a near miss of every label

    FakeModel(near).install()
    run = builder(tmp_path, [], "any", rows=30).configure(max_iterations=0)
    result = run.configure(allow_degenerate_seed=True).run(START)
    check = result.label_check
    assert check is not None and check["off_label_rows"] == check["rows"] == 6
    assert check["near_misses"] == {"positives": "positive", "negatives": "negative"}
    [warning] = [w for w in result.warnings if w["kind"] == "off_label_answers"]
    assert "'positives' for 'positive'" in warning["message"]
    page = render_report(result.to_dict())
    assert "<td>positives</td><td>3</td><td>positive</td>" in page


def test_free_text_has_no_label_check(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "input": f"review {i}: x", "ideal": f"answer {i}"} for i in range(30)]
    FakeModel(lambda request: "answer").install()
    result = (
        PromptOptimizer()
        .set_dataset(rows)
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("instructions")
        .set_run_dir(tmp_path)
        .configure(max_iterations=0, allow_degenerate_seed=True)
        .run(START)
    )
    assert result.label_check is None


def test_the_gate_alone_without_val_rows_lets_a_higher_score_decide() -> None:
    gate = Gate("significant", 0, [], None)
    assert gate.judge(1, None, 0.6, 0.5) == (
        True,
        {"rule": "significant", "against": 0, "rows": 0, "passed": True},
    )
    assert gate.judge(2, None, 0.4, 0.6)[0] is False
    assert gate.judge(3, None, None, 0.6) == (False, None)


def test_resume_after_kill_9_gives_the_same_evidence(tmp_path: Path) -> None:
    prompts = [f"{START} FIX 1", f"{START} {KEYWORD}", f"{START} GOOD"]
    reference = FakeModel(answer).install()
    expected = builder(tmp_path / "ref", prompts, "significant", rows=60).run(START)
    assert [r.evidence is not None for r in expected.iterations] == [True, True, True]
    kill_at = len(reference.requests) * 2 // 3
    load_litellm()
    pid = os.fork()
    if pid == 0:  # child: dies without a word at call kill_at

        def fault(request: FakeRequest, n: int) -> BaseException | None:
            if n >= kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return None

        FakeModel(answer, fault=fault).install()
        try:
            builder(tmp_path / "killed", prompts, "significant", rows=60).run(START)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    FakeModel(answer).install()
    resumed = builder(tmp_path / "killed", prompts, "significant", rows=60).run(START, resume=True)
    assert comparable(resumed) == comparable(expected)
    assert resumed.selection == expected.selection is not None


@pytest.mark.parametrize(("cost", "kept"), [(0.0, True), (0.5, False), (0.1, True)])
def test_length_is_a_cost_when_the_user_prices_it(tmp_path: Path, cost: float, kept: bool) -> None:
    """One more right val row of 6 (+0.167) for ~500 added tokens: at 0.5 per 1,000 tokens it
    owes +0.25 and is refused, at 0.1 it owes +0.05 and is taken, at 0 length is free."""
    row = one_wrong_val_row(tmp_path)
    FakeModel(answer).install()
    longer = f"{START} FIX {row}\n" + "Think about the words. " * 100
    result = builder(tmp_path / "run", [longer], "any").set_prompt_token_cost(cost).run(START)
    [record] = result.iterations
    assert record.is_best is kept
    assert result.best_prompt == (longer if kept else START)
    assert record.evidence is not None
    if cost:
        added = record.evidence["tokens"] - count_tokens(START)
        assert added > 500
        assert record.evidence["length_cost"] == pytest.approx(cost * added / 1000, abs=1e-6)
    if not kept:
        assert "does not pay for" in record.evidence["reason"]


def test_a_shorter_candidate_owes_nothing() -> None:
    gate = Gate("any", 0, [], None, token_cost=10.0, initial_prompt="Classify it. " * 50)
    kept, evidence = gate.judge(1, None, 0.6, 0.5, "Classify it.")
    assert kept and evidence is not None and evidence["passed"]
