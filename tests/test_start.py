"""Starting a run (reflex.run.start): a new run, a resumed one under its lock, the checks made
before any call, the default strategy's note, and the dry run's plan. On the fake model, with
the run's record in tmp_path."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows

from reflex.config import RunConfig
from reflex.data.dataset import load_dataset
from reflex.data.prompts import PromptSpec, chat_spec
from reflex.errors import ConfigurationError
from reflex.result import OptimizationResult
from reflex.run.lock import locked_run
from reflex.run.plan import PricedPlan
from reflex.run.start import plan_run, start_run
from reflex.testing import FakeModel
from reflex_metrics.exact_match import ExactMatch
from tests.test_opening import config_for

START = "Classify the sentiment."
DATASET = load_dataset(make_rows(20), name="reviews")
NOTE = "no strategy and no reasoning model named: running"


def start(
    config: RunConfig,
    spec: PromptSpec | None = None,
    *,
    resume: bool | str = False,
    named: bool = True,
) -> OptimizationResult:
    spec = spec or PromptSpec.single(START)
    return start_run(
        config,
        DATASET,
        [ExactMatch()],
        spec,
        [],
        pipeline=None,
        resume=resume,
        strategy_named=named,
    )


def plan(config: RunConfig, spec: PromptSpec | None = None) -> PricedPlan:
    spec = spec or PromptSpec.single(START)
    return plan_run(config, DATASET, [ExactMatch()], spec, pipeline=None)


def iterative(run_dir: Path, **fields: Any) -> RunConfig:
    fields = {"strategy": "iterative", "reasoning_model": "fake/reasoner", **fields}
    return config_for(run_dir, max_iterations=1, **fields)


def test_a_new_run_runs_the_engine_on_the_prompt(fake_model: FakeModel, tmp_path: Path) -> None:
    result = start(iterative(tmp_path / "rd"))
    assert result.completed and result.initial_prompt == START
    assert result.strategy == "iterative" and result.final is not None
    assert Path(str(result.run_dir)).parent == tmp_path / "rd" / "runs"
    assert (Path(str(result.run_dir)) / "result.json").is_file()
    assert fake_model.calls_to("fake/reasoner")  # the strategy ran


def test_the_default_strategys_note_comes_after_the_settings_are_checked(
    fake_model: FakeModel, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bad = config_for(tmp_path / "rd", feedback_field="nowhere")  # no train row has it
    with caplog.at_level(logging.WARNING), pytest.raises(ConfigurationError, match="nowhere"):
        start(bad, named=False)
    assert NOTE not in caplog.text and fake_model.requests == []  # one error line, no call
    with caplog.at_level(logging.WARNING):
        result = start(config_for(tmp_path / "rd", max_iterations=1), named=False)
    assert result.completed and NOTE in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        start(config_for(tmp_path / "rd", max_iterations=1), named=True)
    assert NOTE not in caplog.text  # the user chose it


@pytest.mark.parametrize(
    ("fields", "chat", "said"),
    [
        ({"prompt_mode": "prepend"}, True, "prompt_mode='prepend' does not apply to a chat"),
        ({"optimize_tool_descriptions": True}, False, "the run offers no tools"),
        ({"max_prompt_tokens": 2}, False, "raise the limit or shorten the prompt"),
    ],
    ids=["prepend-to-a-chat-template", "tool-descriptions-without-tools", "prompt-too-long"],
)
def test_bad_settings_are_refused_before_any_call_or_write(
    fake_model: FakeModel, tmp_path: Path, fields: dict[str, Any], chat: bool, said: str
) -> None:
    messages = [{"role": "system", "content": START}, {"role": "user", "content": "{input}"}]
    spec = chat_spec(messages) if chat else None
    config = iterative(tmp_path / "rd", **fields)
    for attempt in (lambda: start(config, spec), lambda: plan(config, spec)):
        with pytest.raises(ConfigurationError, match=said):
            attempt()
    assert fake_model.requests == [] and not (tmp_path / "rd").exists()


def test_a_dry_run_is_priced_without_a_call_or_a_write(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    priced = plan(iterative(tmp_path / "rd"))
    assert isinstance(priced, PricedPlan) and priced.strategy == "iterative"
    assert priced.models == ("fake/task",) and sum(priced.rows.values()) == len(DATASET)
    assert fake_model.requests == [] and not (tmp_path / "rd").exists()


def test_a_resumed_run_is_locked_before_its_state_is_read(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    config = iterative(tmp_path / "rd")
    done = start(config)
    run = Path(str(done.run_dir))
    calls = len(fake_model.requests)
    with locked_run(run), pytest.raises(ConfigurationError, match="being resumed by another"):
        start(config, resume=run.name)
    assert len(fake_model.requests) == calls


def test_resuming_with_nothing_to_resume_says_what_to_do(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    with pytest.raises(ConfigurationError, match="no unfinished run for this dataset"):
        start(iterative(tmp_path / "rd"), resume=True)
    assert fake_model.requests == []
