"""instructions: candidate instructions read off the references, the label set stated."""

from __future__ import annotations

from pathlib import Path

from test_reasoning_free import START, assert_improves, builder, needs_labels, task

from reflex import Example
from reflex.testing import FakeModel
from reflex_strategies.instructions import InstructionsOptions, instruction_candidates


def test_instructions_states_label_set_and_improves(tmp_path: Path) -> None:
    fake = FakeModel(task(needs_labels)).install()
    result = builder(tmp_path, "instructions").run(START)
    assert_improves(result)
    assert result.best_prompt.startswith(START)  # fixed text first
    assert "The answer is one of: politics, sports, tech." in result.best_prompt
    assert "Answer with only the label" in result.best_prompt
    assert result.iterations[0].is_best and result.iterations[0].accepted
    assert all(r.phase == "instructions" for r in result.iterations)
    assert not fake.calls_to("fake/reasoner")


def _examples(refs: list[str]) -> list[Example]:
    return [
        Example(id=f"e{i}", messages=({"role": "user", "content": f"q{i}"},), ideal=ref)
        for i, ref in enumerate(refs)
    ]


def test_instruction_candidates_by_reference_kind() -> None:
    options = InstructionsOptions()
    numeric = instruction_candidates(_examples(["1", "2.5", "-3", "40"]), START, options)
    assert [p for _, p in numeric] == [f"{START}\n\nAnswer with only the number, nothing else."]
    assert instruction_candidates(_examples(["a long answer", "another one"]), START, options) == []
    assert (
        instruction_candidates(_examples([f"l{i}" for i in range(30)] * 2), START, options) == []
    )  # too many labels for a label set
    labels = instruction_candidates(_examples(["yes", "no"] * 4), START, options)
    assert len(labels) == 4 and 'yes: e.g. "q0"' in labels[1][1]
    assert (
        len(
            instruction_candidates(
                _examples(["yes", "no"] * 4), START, InstructionsOptions(max_candidates=2)
            )
        )
        == 2
    )
