"""Pipeline mode and the reasoning model: traces and failure reasons in its prompts; the budget
reserve of the final evaluation for pipelines that call a model several times per row."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import KEYWORD, make_rows, task_answer

from reflex import OptimizationResult, PromptOptimizer
from reflex.data.pipeline import Prompt, Trace
from reflex.result import RunEnd, Sample
from reflex.testing import FakeModel, FakeRequest
from reflex.types import Example
from reflex_strategies._rows import sample_row, trace_text

START = "Classify the sentiment."
REASONER = "fake/reasoner"


def reasoner_answer(request: FakeRequest) -> str:
    """A new prompt per request (so every proposal is new), right on every row."""
    tag = hashlib.sha256(request.user.encode()).hexdigest()[:6]
    prompt = f"Classify the sentiment ({tag}). {KEYWORD}"
    # gepa/iterative parse <prompt>; pdo and opro take every <prompt> block.
    return f"<diagnosis>chatty</diagnosis>\n<edit>one word</edit>\n<prompt>{prompt}</prompt>"


def responder(request: FakeRequest) -> str:
    if request.model.startswith(REASONER):
        return reasoner_answer(request)
    if request.model in ("fake/polisher", "fake/checker"):  # "<row> -> <text>": the text, lower
        return request.user.rsplit("-> ", 1)[-1].strip().lower()
    return task_answer(request)


@pytest.fixture
def fake() -> FakeModel:
    return FakeModel(responder).install()


def two_step(prompt: Prompt, input: str, call: Callable[..., str]) -> str:
    label = call(
        [{"role": "system", "content": prompt}, {"role": "user", "content": input}], step="classify"
    )
    return call(f"{input} -> {label}", model="fake/polisher", step="polish")


def three_step(prompt: Prompt, input: str, call: Callable[..., str]) -> str:
    """Three task-model calls per row, each unique to the row: three paid calls per row."""
    polished = two_step(prompt, input, call)
    return call(f"check {input} -> {polished}", model="fake/checker", step="check")


def optimize(
    strategy: str,
    tmp_path: Path,
    pipeline: Callable[..., Any] | None = two_step,
    *,
    timeout: float = 10,
    iterations: int = 1,
    max_calls: int | None = None,
    reasoner: str = REASONER,
    **options: Any,
) -> OptimizationResult:
    run = PromptOptimizer()
    run = run.set_dataset(make_rows(20)) if pipeline is None else run.set_inputs(make_rows(20))
    if pipeline is not None:
        run = run.set_pipeline(pipeline, timeout=timeout)
    return (
        run.add_provider("fake/task")
        .add_metric("exact_match")
        .set_reasoning_model(reasoner)
        .set_strategy(strategy, **options)
        .set_budget(max_calls=max_calls)
        .configure(
            max_iterations=iterations,
            early_stopping_patience=None,
            batch_size=12,
            run_dir=str(tmp_path),
        )
        .run(START)
    )


def reasoning_prompts(fake: FakeModel) -> list[str]:
    return [
        "\n".join(m["content"] for m in r.messages)
        for r in fake.requests
        if r.model.startswith(REASONER)
    ]


# --- the trace in the reasoning prompt ----------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "options"),
    [("iterative", {"worst_k": 12}), ("gepa", {"minibatch_size": 4})],
)
def test_reasoning_prompt_shows_the_trace_of_failing_examples(
    fake: FakeModel, tmp_path: Path, strategy: str, options: dict[str, Any]
) -> None:
    optimize(strategy, tmp_path, **options)
    prompt = reasoning_prompts(fake)[0]
    assert "pipeline trace (2 steps):" in prompt
    assert "step 1 (classify):" in prompt and "step 2 (polish):" in prompt
    # A failing row: the task model's sentence, then the polisher's lower-cased copy of it.
    failing = next(line for line in prompt.splitlines() if "output: I think this review is" in line)
    label = failing.rsplit(" ", 1)[-1]
    assert f"    output: I think this review is {label}" in prompt
    assert f"    output: i think this review is {label}" in prompt
    assert f"-> I think this review is {label}" in prompt  # the polish step's input


def test_pdo_mutation_shows_the_losers_trace(fake: FakeModel, tmp_path: Path) -> None:
    optimize("pdo", tmp_path, iterations=4, generated=1, pool_size=2, mutate_every=1, mutate_top=2)
    losses = [p for p in reasoning_prompts(fake) if "its output:" in p]  # a mutated loser
    assert losses and "pipeline trace (2 steps):" in losses[0]
    assert "step 2 (polish):" in losses[0]


def long_trace(prompt: Prompt, input: str, call: Callable[..., str]) -> Trace:
    trace = Trace()
    notes = trace.step("retrieve", input, "x" * 5000)
    for n in range(12):
        trace.step(f"hop{n}", notes[:50], "y" * 200)
    label = call([{"role": "system", "content": prompt}, {"role": "user", "content": input}])
    return trace.finish(trace.step("classify", input, label))


def test_long_traces_are_cut_with_a_marker(fake: FakeModel, tmp_path: Path) -> None:
    optimize("iterative", tmp_path, long_trace, worst_k=2)
    prompt = reasoning_prompts(fake)[0]
    assert "x" * 601 not in prompt and "x" * 600 + " …[+4400 chars cut]" in prompt
    assert "steps not shown in full]" in prompt and "step 14 (classify)" not in prompt
    # Two rows shown, each trace within 4 x max_chars (600): the prompt stays bounded.
    assert len(prompt) < 2 * (4 * 600 + 1200) + 2000


def test_trace_text_budgets() -> None:
    trace = [{"name": f"s{n}", "input": {"q": n}, "output": "o" * 30} for n in range(5)]
    text = trace_text(trace, step_chars=10, total_chars=120)
    assert text.startswith("pipeline trace (5 steps):\n  step 1 (s1)".replace("s1", "s0"))
    assert 'input: {"q": 0}' in text and "o" * 10 + " …[+20 chars cut]" in text
    assert text.endswith("steps not shown in full]") and "step 5" not in text
    assert trace_text([], 10, 100) == "" and trace_text(trace, 100, 10_000).count("step ") == 5


async def _failing(prompt: Prompt, input: str, call: Any) -> str:
    index = int(input.split()[1].rstrip(":"))
    if index % 3 == 1:
        raise ValueError("could not parse the label")
    if index % 3 == 2:
        await asyncio.sleep(30)  # cancelled at the timeout
    label = await call(
        [{"role": "system", "content": prompt}, {"role": "user", "content": input}], step="classify"
    )
    return str(label)


@pytest.mark.parametrize("strategy", ["iterative", "gepa"])
def test_failed_and_timed_out_rows_show_their_reason(
    fake: FakeModel, tmp_path: Path, strategy: str
) -> None:
    options: dict[str, Any] = {"worst_k": 12} if strategy == "iterative" else {"minibatch_size": 12}
    optimize(strategy, tmp_path, _failing, timeout=0.3, **options)
    prompt = reasoning_prompts(fake)[0]
    assert "error: pipeline failed: ValueError: could not parse the label" in prompt
    assert "error: pipeline failed: timeout after 0.3s" in prompt
    assert "feedback (exact_match): pipeline failed" not in prompt  # the reason, once per row
    assert "step 1 (classify):" in prompt  # the rows that ran still show their trace


@pytest.mark.parametrize(
    ("strategy", "options"),
    [("iterative", {}), ("gepa", {}), ("pdo", {"mutate_every": 1})],
)
def test_plain_runs_have_no_trace_section(
    fake: FakeModel, tmp_path: Path, strategy: str, options: dict[str, Any]
) -> None:
    optimize(strategy, tmp_path, None, iterations=3, **options)
    prompts = reasoning_prompts(fake)
    assert prompts and not any("pipeline trace" in p or "step 1 (" in p for p in prompts)


def test_plain_rows_are_unchanged() -> None:
    """The exact bytes a row had before traces: cached reasoning answers depend on them."""
    example = Example(id="r1", messages=({"role": "user", "content": "in"},), ideal="pos")
    sample = Sample(
        "r1", "fake/task", "out", 0.0, feedback={"m": "wrong"}, error="m: judge unparseable"
    )
    gepa_row = "input: in\noutput: out\nexpected: pos\nscore: 0.0\nerror: m: judge unparseable"
    assert sample_row(example, sample, 600) == gepa_row + "\nfeedback (m): wrong"
    iterative_row = "input: in\noutput: out\nscore: 0.0\nfeedback (m): wrong"
    assert sample_row(example, sample, 600, reference=False, error=False) == iterative_row


# --- the final evaluation's reserve ---------------------------------------------------------------


@pytest.mark.parametrize("max_calls", [102, 105])
def test_reserve_holds_a_multi_call_final_evaluation(
    fake: FakeModel, tmp_path: Path, max_calls: int
) -> None:
    # Reserving one call per test row left too little room for this pipeline's final
    # evaluation (3 calls per row): the run ended without a final score.
    result = optimize("iterative", tmp_path, three_step, iterations=50, max_calls=max_calls)
    # Paused on the budget (not ``completed``, issue 18), with its final test score measured.
    assert result.end_state is RunEnd.PAUSED_BUDGET and result.final is not None
    assert str(result.stop_reason).startswith("budget exhausted")
    paid = [r for r in fake.requests if not r.model.startswith(REASONER)]
    assert result.usage["task"]["calls"] == len(paid) <= max_calls


def test_reserve_counts_a_baseline_served_from_the_cache(fake: FakeModel, tmp_path: Path) -> None:
    optimize("iterative", tmp_path, three_step, iterations=0)  # fills the shared cache
    # Same run dir: the baseline is all cache hits (0 paid calls), but the final evaluation of
    # a new prompt would pay for every request: a reserve of the paid calls (0) let the
    # iterations spend the whole budget and the run ended without a final score.
    result = optimize(
        "iterative", tmp_path, three_step, iterations=50, max_calls=50, reasoner=REASONER + "-b"
    )
    assert result.end_state is RunEnd.PAUSED_BUDGET and result.final is not None
    assert result.usage["task"]["calls"] <= 50
