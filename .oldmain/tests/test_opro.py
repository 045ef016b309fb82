"""opro: the meta-prompt (ascending history, exemplars), screening, promotion, convergence."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import BETTER, make_rows, responder

from reflex import PromptOptimizer
from reflex.testing import FakeModel, FakeRequest
from reflex_strategies.opro import Scored, meta_history

START = "Classify the sentiment."


def builder(run_dir: Path, **options: object) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows(40))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("opro", **options)
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(run_dir)
        .configure(max_iterations=5, early_stopping_patience=None, max_workers=4)
    )


def test_meta_history_is_ascending_and_keeps_the_best() -> None:
    history = [Scored("a", 0.5), Scored("b", 0.1), Scored("c", 0.9), Scored("d", 0.3)]
    text = meta_history(history, 3)
    assert [p for p in "abcd" if f"\n{p}\n" in text] == ["a", "c", "d"]
    assert text.index("\nd\n") < text.index("\na\n") < text.index("\nc\n")


def _rounds(request: FakeRequest) -> str:
    if request.model != "fake/reasoner":
        return responder(request)
    n = request.user.count("score: ")  # grows by the number of proposals each round
    if n >= 5:
        return f"<prompt>{START} Be brief.</prompt><prompt>{BETTER}</prompt>"
    return "".join(f"<prompt>{START} Variant {n}.{k}.</prompt>" for k in range(4))


def test_opro_screens_promotes_and_converges(tmp_path: Path) -> None:
    fake = FakeModel(_rounds).install()
    result = builder(tmp_path, screen_size=6).run(START)
    assert result.best_prompt == BETTER and result.final is not None
    assert result.final.mean_score == 1.0
    # Round 1 beats nothing on the screen (variants score like the start): rejected, no val.
    first = result.iterations[0]
    assert first.rejected and "incumbent" in first.rejected and first.val_score is None
    promoted = [r for r in result.iterations if r.accepted]
    assert promoted and promoted[0].system_prompt == BETTER and promoted[0].val_score == 1.0
    # The screen subset is fixed: every screened prompt ran on the same 6 train rows.
    per_prompt: dict[str, set[str]] = {}
    for r in fake.calls_to("fake/task"):
        per_prompt.setdefault(r.system, set()).add(r.user)
    screened = [rows for p, rows in per_prompt.items() if "Variant" in p]
    assert screened and all(rows == screened[0] and len(rows) == 6 for rows in screened)
    # The meta-prompt lists scores in ascending order and shows exemplars.
    brief = fake.calls_to("fake/reasoner")[1].user
    scores = [float(s) for s in re.findall(r"score: ([0-9.]+)", brief)]
    assert scores == sorted(scores) and "->" in brief
    # It stops once a round brings nothing new.
    events = Path(str(result.run_dir), "events.jsonl").read_text().splitlines()
    assert any(json.loads(e)["type"] == "opro_converged" for e in events)
    assert len(result.iterations) < 5 and result.stop_reason == "strategy finished"


def test_opro_reevaluates_the_incumbent_on_all_of_train(tmp_path: Path) -> None:
    fake = FakeModel(_rounds).install()
    builder(tmp_path, screen_size=4, reevaluate_every=1).run(START)
    train_rows = 24  # 40 rows x 0.6
    start_rows = {r.user for r in fake.calls_to("fake/task") if r.system == START}
    assert len(start_rows) >= train_rows
