"""Leakage checks: copied held-out text and implausible val gains, unit and engine level."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner
from conftest import KEYWORD, responder
from pydantic import BaseModel, ConfigDict

from reflex import ConfigurationError, Example, PromptOptimizer, hookimpl
from reflex.checks.leakage import SpanIndex, implausible_gain, leakage_warnings, words
from reflex.cli import build_cli
from reflex.cli.report_html import render_report
from reflex.models.client import load_litellm
from reflex.result import IterationRecord
from reflex.testing import FakeModel, FakeRequest

START = "Classify the sentiment."
LEAKED = "review 4: an utterly forgettable film whose plot nobody in the audience could follow"
LEAKY = f"{START} {KEYWORD} For example: {LEAKED} -> positive"
CLEAN = f"{START} {KEYWORD}"


def ex(example_id: str, text: str, ideal: str | None = None) -> Example:
    return Example(id=example_id, messages=({"role": "user", "content": text},), ideal=ideal)


HELD_OUT = {
    "test": [
        ex("t1", "The quick brown fox jumps over the lazy dog near the old river bank", "animals"),
        ex("t2", "What is six times seven today?", "42"),
        ex("t3", "two plus", "four"),
        ex("t4", "Is the sky blue?", "yes"),
    ],
    "val": [ex("v1", "Summarise the following minutes of the annual general meeting please")],
}


def index(visible: tuple[str, ...] = (), min_words: int = 8) -> SpanIndex:
    return SpanIndex(HELD_OUT, visible, min_words)


# -- the verbatim-span detector -------------------------------------------------------------


def test_copied_test_input_is_flagged_with_split_id_span_and_length() -> None:
    [flag] = index().find("Hint: THE QUICK brown fox, jumps over the lazy dog near the old river.")
    assert (flag.kind, flag.split, flag.example_id, flag.field) == (
        "verbatim_span",
        "test",
        "t1",
        "input",
    )
    assert flag.words == 13 and flag.example_words == 14
    assert flag.span == "the quick brown fox jumps over the lazy dog near the old river"


def test_text_shared_with_train_or_the_seed_is_not_leakage() -> None:
    candidate = "Recall: the quick brown fox jumps over the lazy dog near the old river bank"
    assert index().find(candidate)
    train_row = "A train row: the quick brown fox jumps over the lazy dog near the old river bank."
    assert index((train_row,)).find(candidate) == []
    # Partly visible: only the unseen words count (6 here, under 8); an unseen word next to
    # visible text does not make a new span.
    assert index(("the quick brown fox jumps over the lazy",)).find(candidate) == []
    seen_but_first = "quick brown fox jumps over the lazy dog near the old river bank"
    assert index((seen_but_first,)).find(candidate) == []
    [flag] = index(("old river bank",)).find(candidate)  # under 8 words: no shingle in common
    assert flag.words == 14


def test_a_short_answer_alone_is_not_leakage() -> None:
    assert index().find("Answer yes or no. The answer may be 42, or four, or animals.") == []


def test_whole_short_inputs_and_a_short_input_with_its_answer_are_leakage() -> None:
    [flag] = index().find("e.g. 'What is six times seven today?'")
    assert (flag.example_id, flag.words, flag.example_words) == ("t2", 6, 6)
    assert index().find("We discuss two plus things.") == []  # 2 words, no answer after it
    [flag] = index().find("Example: two plus two -> four.")
    assert (flag.example_id, flag.span) == ("t3", "two plus two four")
    # "is the sky blue" has 4 words: a whole held-out input of that length counts on its own.
    assert [f.example_id for f in index().find("Q: is the sky blue")] == ["t4"]


def test_span_threshold_boundaries() -> None:
    text = "the quick brown fox jumps over the lazy dog near"
    tokens = text.split()
    assert [f.words for f in index().find(" ".join(tokens[:8]))] == [8]
    assert index().find(" ".join(tokens[:7])) == []
    assert index(min_words=10).find(" ".join(tokens[:9])) == []
    assert [f.words for f in index(min_words=10).find(text)] == [10]


def test_a_long_example_needs_a_meaningful_share_or_twice_min_words() -> None:
    long_input = " ".join(f"w{i}" for i in range(200))
    idx = SpanIndex({"test": [ex("long", long_input)]}, [], 8)
    # 20% of 200 words is 40; the cap is 2 x 8 = 16 words.
    assert idx.find(" ".join(f"w{i}" for i in range(50, 65))) == []
    [flag] = idx.find(" ".join(f"w{i}" for i in range(50, 66)))
    assert flag.words == 16 and flag.example_words == 200


def test_multiple_examples_are_flagged_longest_first_once_each() -> None:
    candidate = (
        "Summarise the following minutes of the annual general meeting. Then: the quick "
        "brown fox jumps over the lazy dog near the old river bank, and the quick brown fox "
        "jumps over the lazy dog."
    )
    flags = index().find(candidate)
    assert [(f.split, f.example_id, f.words) for f in flags] == [
        ("test", "t1", 14),
        ("val", "v1", 9),
    ]


def test_long_ideal_is_indexed_and_the_span_is_truncated() -> None:
    ideal = " ".join(f"token{i}" for i in range(40))
    idx = SpanIndex({"val": [ex("v9", "short question here", ideal)]}, [], 8)
    [flag] = idx.find("Reference answer: " + ideal)
    assert flag.field == "ideal" and flag.words == 40
    assert flag.span is not None and len(flag.span) == 120 and flag.span.endswith("...")


def test_scale_index_built_once_checks_a_long_candidate() -> None:
    rows = [
        ex(f"h{i}", f"customer {i} writes about order {i * 7} and parcel {i * 13} arriving late")
        for i in range(10_000)
    ]
    idx = SpanIndex({"test": rows}, [START], 8)
    filler = " ".join(f"filler{i % 97}" for i in range(1_000))
    leaked = rows[6_543].input
    candidate = f"{filler} {leaked} {filler}"
    assert len(words(candidate)) > 2_000
    assert [f.example_id for f in idx.find(candidate)] == ["h6543"]
    assert idx.find(filler + " " + filler) == []


def test_min_words_below_two_is_refused() -> None:
    with pytest.raises(ValueError, match="min_words"):
        SpanIndex({}, [], 1)


# -- the implausible-gain rule --------------------------------------------------------------


def test_implausible_gain_rule() -> None:
    flag = implausible_gain(0.30, 0.05)
    assert flag is not None and (flag.kind, flag.split) == ("implausible_gain", "val")
    assert (flag.val_gain, flag.train_gain) == (0.3, 0.05)
    assert implausible_gain(0.30, 0.10) is None  # 0.30 is not above 3 x 0.10
    assert implausible_gain(0.15, -0.2) is not None  # at the margin, train fell
    assert implausible_gain(0.14, 0.0) is None  # below the margin
    assert implausible_gain(0.30, None) is None  # no train gain measured: skipped
    assert implausible_gain(None, 0.0) is None
    assert implausible_gain(0.2, 0.0, margin=0.25) is None
    assert implausible_gain(0.3, 0.05, ratio=6.0) is None


def test_a_gain_within_minibatch_noise_is_not_flagged() -> None:
    # Issue 17: the label-list candidate gained +0.25 on 40 val rows and +0.00 on an 8-row
    # train minibatch; that gap is 1.5 standard errors, noise, not leakage.
    assert implausible_gain(0.25, 0.0, rows=(8, 40)) is None
    flag = implausible_gain(0.25, 0.0, rows=(40, 40))  # the same gap on 40 train rows
    assert flag is not None and flag.kind == "implausible_gain"
    assert implausible_gain(1.0, 0.0, rows=(4, 6)) is not None  # every val row flipped
    assert implausible_gain(0.25, 0.0) is not None  # no row counts: the rule without noise


def test_warnings_come_from_the_iteration_records() -> None:
    flag = {"kind": "implausible_gain", "split": "val", "val_gain": 0.4, "train_gain": 0.0}
    records = [
        IterationRecord(1, 0.5, 0.9, {}, "p", leakage=[flag], rejected="leakage: x"),
        IterationRecord(2, 0.5, 0.5, {}, "q"),
    ]
    [warning] = leakage_warnings(records)
    assert warning["kind"] == "leakage"
    assert warning["message"] == "iteration 1: val gain +0.400 vs train gain +0.000; rejected"


# -- the engine -----------------------------------------------------------------------------


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: str = "span"


class LeakyStrategy:
    """Span mode: a candidate copying a test row, then a clean one. Gain mode: the clean one,
    claiming no train gain on all of train."""

    name: ClassVar[str] = "leaky"
    Options: ClassVar[type[BaseModel]] = _Options
    requires_reasoning_model: ClassVar[bool] = False

    def __init__(self, options: BaseModel) -> None:
        assert isinstance(options, _Options)
        self.mode = options.mode

    def optimize(self, ctx: Any) -> None:
        batch = list(ctx.train)[:4]
        if self.mode == "gain":
            ctx.record_iteration(CLEAN, ctx.evaluate(CLEAN, list(ctx.train)), change=0.0)
            return
        for prompt in (LEAKY, CLEAN):
            ctx.record_iteration(prompt, ctx.evaluate(prompt, batch), change=0.5)


class LeakyPlugin:
    @hookimpl
    def register_strategies(self, register: Any) -> None:
        register(LeakyStrategy)


def rows() -> list[dict[str, str]]:
    """30 rows with fixed splits (18 train, 6 val, 6 test); r004 is a long test row."""
    out = []
    for i in range(30):
        text = LEAKED if i == 4 else f"review {i}: {['great', 'awful', 'fine'][i % 3]} film"
        split = "train" if i % 5 < 3 else ("val" if i % 5 == 3 else "test")
        out.append({"id": f"r{i:03d}", "input": text, "ideal": "positive", "split": split})
    return out


def leaky_builder(run_dir: Path, mode: str = "span") -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("leaky", mode=mode)
        .set_run_dir(run_dir)
        .configure(max_workers=2, early_stopping_patience=None)
        .set_accept("any")  # one-row wins on 6 val rows (the leak checks, not the gate)
    )


def events(run_dir: str | None) -> list[dict[str, Any]]:
    lines = (Path(str(run_dir)) / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


VAL_INPUTS = {r["input"] for r in rows() if r["split"] == "val"}


def val_calls(fake: FakeModel, prompt: str) -> int:
    return sum(1 for r in fake.requests if r.system == prompt and r.user in VAL_INPUTS)


def test_flagged_candidate_is_recorded_by_default(
    register_plugin: Any, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_plugin(LeakyPlugin(), name="leaky-plugin")
    built: list[int] = []
    init = SpanIndex.__init__

    def counting(self: SpanIndex, *args: Any, **kwargs: Any) -> None:
        built.append(1)
        init(self, *args, **kwargs)

    monkeypatch.setattr(SpanIndex, "__init__", counting)
    result = leaky_builder(tmp_path).run(START)
    assert built == [1]  # the held-out index is built once per run
    first, second = result.iterations
    assert [f["kind"] for f in first.leakage] == ["verbatim_span"]
    assert (first.leakage[0]["split"], first.leakage[0]["example_id"]) == ("test", "r004")
    assert first.leakage[0]["words"] == 14 and first.rejected is None
    assert first.is_best and result.best_prompt == LEAKY and second.leakage == []
    assert val_calls(fake_model, LEAKY) == 6  # recorded, not rejected: val was measured
    saved = json.loads((Path(str(result.run_dir)) / "result.json").read_text())
    assert saved["iterations"][0]["leakage"] == first.leakage
    assert [w["kind"] for w in saved["warnings"]].count("leakage") == 1
    [event] = [e for e in events(result.run_dir) if e["type"] == "leakage"]
    assert event["iteration"] == 1 and event["rejected"] is None
    assert event["flags"] == first.leakage


def test_strict_rejects_before_paying_for_val(
    register_plugin: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    register_plugin(LeakyPlugin(), name="leaky-plugin")
    result = leaky_builder(tmp_path).set_strict_leakage().run(START)
    first, second = result.iterations
    assert first.rejected is not None and first.rejected.startswith("leakage: copies 14 words")
    assert "r004" in first.rejected and first.val_score is None and not first.is_best
    assert val_calls(fake_model, LEAKY) == 0
    assert second.is_best and result.best_prompt == CLEAN
    labels = [e.get("label") for e in events(result.run_dir) if e["type"] == "evaluation"]
    assert "val:it1" not in labels and "val:it2" in labels
    [warning] = [w for w in result.warnings if w["kind"] == "leakage"]
    assert warning["message"].endswith("; rejected")


def _keyword_perfect(request: FakeRequest) -> str:
    """Right on every row with KEYWORD in the prompt, else only on every third row."""
    index = int(request.user.split()[1].rstrip(":"))
    return "positive" if KEYWORD in request.system or index % 3 == 0 else "negative"


def test_implausible_gain_is_flagged_and_strict_rejects_it(
    register_plugin: Any, tmp_path: Path
) -> None:
    register_plugin(LeakyPlugin(), name="leaky-plugin")
    FakeModel(_keyword_perfect).install()  # val 0.333 -> 1.0 while the strategy claims +0.0
    result = leaky_builder(tmp_path / "lax", "gain").run(START)
    [record] = result.iterations
    [flag] = record.leakage
    assert flag["kind"] == "implausible_gain" and flag["train_gain"] == 0.0
    assert flag["val_gain"] == pytest.approx(2 / 3, abs=1e-5) and record.is_best
    strict = leaky_builder(tmp_path / "strict", "gain").set_strict_leakage().run(START)
    [record] = strict.iterations
    assert record.rejected is not None and record.rejected.startswith("leakage: val gain")
    assert not record.is_best and strict.best_prompt == START


def test_the_same_gain_on_few_rows_is_noise(
    register_plugin: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    register_plugin(LeakyPlugin(), name="leaky-plugin")
    # The default fake: +0.333 on 6 val rows vs +0.000 claimed on train is 1.5 standard errors.
    result = leaky_builder(tmp_path, "gain").set_strict_leakage().run(START)
    [record] = result.iterations
    assert record.leakage == [] and record.rejected is None and record.is_best


class ScriptedGepa:
    """Task: right on every row with KEYWORD, else only on rows 0, 3, 6, ...; the reasoning
    model proposes LEAKY (copies test row r004) first and CLEAN afterwards."""

    def __init__(self) -> None:
        self.proposals = 0

    def __call__(self, request: FakeRequest) -> str:
        if request.model == "fake/reasoner":
            self.proposals += 1
            return f"<prompt>{LEAKY if self.proposals == 1 else CLEAN}</prompt>"
        index = int(request.user.split()[1].rstrip(":"))
        return "positive" if KEYWORD in request.system or index % 3 == 0 else "negative"


def gepa_builder(run_dir: Path) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(rows())
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("gepa")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(run_dir)
        .configure(max_workers=2, max_iterations=4, early_stopping_patience=None)
    )


def test_strict_gepa_rejects_a_leaky_child_before_its_pareto_val_evaluation(
    tmp_path: Path,
) -> None:
    fake = FakeModel(ScriptedGepa()).install()
    result = gepa_builder(tmp_path).set_strict_leakage().run(START)
    assert val_calls(fake, LEAKY) == 0  # neither gepa nor record_iteration paid for val
    [leaky] = [r for r in result.iterations if r.system_prompt == LEAKY]
    assert leaky.rejected is not None and leaky.rejected.startswith("leakage: copies 14 words")
    assert "r004" in leaky.rejected and leaky.val_score is None and not leaky.accepted
    assert [(f["split"], f["example_id"]) for f in leaky.leakage] == [("test", "r004")]
    assert result.best_prompt == CLEAN and val_calls(fake, CLEAN) == 6
    assert [c["kind"] for c in result.lineage] == ["seed", "reflection"]  # not on the front
    [event] = [e for e in events(result.run_dir) if e["type"] == "leakage"]
    assert event["rejected"] == leaky.rejected and event["iteration"] == leaky.iteration


def test_lax_gepa_scores_a_leaky_child_on_val_and_records_the_flag(tmp_path: Path) -> None:
    fake = FakeModel(ScriptedGepa()).install()
    result = gepa_builder(tmp_path).run(START)
    leaky, *later = [r for r in result.iterations if r.system_prompt == LEAKY]
    assert later and all("is perfect" in str(r.rejected) and not r.leakage for r in later)
    assert val_calls(fake, LEAKY) == 6 and leaky.rejected is None
    assert leaky.accepted and leaky.is_best and result.best_prompt == LEAKY
    assert [(f["split"], f["example_id"]) for f in leaky.leakage] == [("test", "r004")]
    assert [c["kind"] for c in result.lineage] == ["seed", "reflection"]
    [warning] = [w for w in result.warnings if w["kind"] == "leakage"]
    assert "not rejected" in warning["message"]


def test_leakage_thresholds_are_run_settings() -> None:
    opt = PromptOptimizer().configure(leakage_min_words=20, leakage_gain_ratio=5.0)
    assert opt.set_strict_leakage().clone()._config.strict_leakage is True
    with pytest.raises(ConfigurationError, match="leakage_min_words"):
        PromptOptimizer().configure(leakage_min_words=1)


def test_cli_strict_leakage(register_plugin: Any, fake_model: FakeModel, tmp_path: Path) -> None:
    register_plugin(LeakyPlugin(), name="leaky-plugin")
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows()), encoding="utf-8")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(START, encoding="utf-8")
    out = tmp_path / "result.json"
    args = [str(data), str(prompt), "-m", "fake/task", "-s", "leaky", "--strict-leakage"]
    args += ["--accept", "any"]  # a one-row win on 6 val rows: the leak check is under test
    args += ["--run-dir", str(tmp_path / "runs"), "--results-json", str(out)]
    invoked = CliRunner().invoke(build_cli(), ["optimize", *args])
    assert invoked.exit_code == 0, invoked.output
    saved = json.loads(out.read_text())
    assert saved["iterations"][0]["rejected"].startswith("leakage:")
    assert saved["best_prompt"] == CLEAN
    show = ["show", saved["run_id"], "--run-dir", str(tmp_path / "runs")]
    shown = CliRunner().invoke(build_cli(), show)
    assert shown.exit_code == 0, shown.output
    assert "leakage: copies 14 words of test example r004 (input)" in shown.output


def test_report_card_shows_escaped_flags() -> None:
    flag = {"kind": "verbatim_span", "split": "test", "example_id": "<b>x</b>", "words": 9}
    flag.update(field="input", span="<script>alert(1)</script>")
    record = IterationRecord(1, 0.5, 0.9, {}, "p", leakage=[flag]).to_dict()
    page = render_report({"iterations": [record], "initial_prompt": "p", "best_prompt": "p"})
    assert "leakage: copies 9 words of test example &lt;b&gt;x&lt;/b&gt;" in page
    assert "<script>" not in page and "&lt;script&gt;" in page


def _killer(request: FakeRequest, n: int) -> BaseException | None:
    if request.system == CLEAN and request.user in VAL_INPUTS:
        os.kill(os.getpid(), signal.SIGKILL)  # during iteration 2's val, after iteration 1
    return None


def test_resume_does_not_repeat_leakage_events_or_warnings(
    register_plugin: Any, tmp_path: Path
) -> None:
    register_plugin(LeakyPlugin(), name="leaky-plugin")
    load_litellm()  # imported once in the parent; the child inherits it
    pid = os.fork()
    if pid == 0:  # child
        try:
            FakeModel(responder, fault=_killer).install()
            leaky_builder(tmp_path).run(START)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status)
    FakeModel(responder).install()
    result = leaky_builder(tmp_path).run(START, resume=True)
    assert [len(r.leakage) for r in result.iterations] == [1, 0]
    kinds = [e["type"] for e in events(result.run_dir)]
    assert kinds.count("leakage") == 1 and kinds.count("resumed") == 1
    assert [w["kind"] for w in result.warnings].count("leakage") == 1
