"""random: paraphrases without feedback, each measured on val; stops when variants run out."""

from __future__ import annotations

from pathlib import Path

from conftest import BETTER, make_rows, responder

from reflex import PromptOptimizer
from reflex.testing import FakeModel, FakeRequest

START = "Classify the sentiment."


def builder(run_dir: Path) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows(40))
        .add_provider("fake", "task")
        .add_metric("exact_match")
        .set_strategy("random", variants_per_round=3)
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(run_dir)
        .configure(max_iterations=8, early_stopping_patience=None, max_workers=4)
        .set_race(False)  # each variant measured on every val row; raced: below
    )


def _paraphrases(request: FakeRequest) -> str:
    if request.model != "fake/reasoner":
        return responder(request)
    brief = request.messages[1]["content"]  # the request, also when this is a retry
    n = int(brief.rsplit("variant set ", 1)[1].split(")")[0])
    if n > 2:
        return f"<prompt>{START} Paraphrase 1.0</prompt>"  # nothing new from round 3 on
    texts = [f"{START} Paraphrase {n}.{k}" for k in range(3)]
    if n == 2:
        texts[1] = BETTER
    return "".join(f"<prompt>{t}</prompt>" for t in texts)


def test_random_measures_every_variant_without_feedback(tmp_path: Path) -> None:
    fake = FakeModel(_paraphrases).install()
    result = builder(tmp_path / "a").run(START)
    assert len(result.iterations) == 6 and all(r.val_score is not None for r in result.iterations)
    assert result.best_prompt == BETTER
    for request in fake.calls_to("fake/reasoner"):
        brief = request.messages[1]["content"]
        assert "score" not in brief.lower() and "output" not in brief.lower()
        assert START in brief and BETTER not in brief  # always the start prompt
    again = builder(tmp_path / "b").run(START)
    assert [r.system_prompt for r in again.iterations] == [
        r.system_prompt for r in result.iterations
    ]


def test_random_races_each_rounds_variants_under_race(tmp_path: Path) -> None:
    fake = FakeModel(_paraphrases).install()
    result = builder(tmp_path).set_dataset(make_rows(80)).set_race().run(START)
    assert len(result.iterations) == 6  # two rounds of three variants, each recorded once
    assert all(r.race is not None for r in result.iterations)
    races = {r.race["race"] for r in result.iterations if r.race is not None}
    assert races == {1, 2}  # one race per round
    dropped = [r for r in result.iterations if r.race is not None and r.race["dropped"]]
    assert len(dropped) >= 2  # halving drops at least one variant of three in each round
    for record in dropped:
        assert record.race is not None and record.race["rung"] < record.race["rungs"]
        assert record.val_score is None and not record.is_best
        # its calls stopped at its rung's val rows (no train screen, no test measurement)
        sent = [r.user for r in fake.requests if r.system == record.system_prompt]
        assert len(sent) == len(record.race["rows"]) < 16
    assert result.best_prompt == BETTER
    [best] = [r for r in result.iterations if r.is_best]
    assert best.race is not None and not best.race["dropped"] and best.val_score is not None
