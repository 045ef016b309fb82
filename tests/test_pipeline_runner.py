"""PipelineRunner (reflex/run/pipeline_runner.py): a pipeline function run per example, its trace
and trace metrics, failures scored zero with their reason, timeouts, the candidate's components."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
from test_pipeline import Exact, StepCount, evaluate, examples, pipeline_responder, two_step

from reflex import ProviderError
from reflex.data.pipeline import (
    Prompt,
    Trace,
    pipeline_from_function,
)
from reflex.data.prompts import PromptSpec
from reflex.run.pipeline_runner import components_of
from reflex.testing import FakeModel, FakeRequest
from reflex.types import Example


@pytest.fixture
def fake() -> FakeModel:
    return FakeModel(pipeline_responder).install()


def test_trace_metric_receives_the_whole_trace(fake: FakeModel) -> None:
    metric = StepCount()
    snap = evaluate(two_step, examples(3), metrics=[metric, Exact()])
    assert snap.scores_by_metric == {"two_steps": 1.0, "exact": 1.0}
    assert sorted(t["output"] for t in metric.seen) == sorted(s.output for s in snap.samples)
    assert [s["name"] for s in metric.seen[0]["steps"]] == ["classify", "polish"]


def test_trace_metrics_by_name_and_returned_trace(fake: FakeModel) -> None:
    class Named(StepCount):
        scores_trace = False

    def explicit(prompt: Prompt, input: str, call: Callable[..., str]) -> Trace:
        trace = Trace()
        got = trace.step(
            "classify",
            input,
            call([{"role": "system", "content": prompt}, {"role": "user", "content": input}]),
        )
        return trace.finish(got)

    metric = Named()
    snap = evaluate(explicit, examples(2), metrics=[metric], trace_metrics=("two_steps",))
    assert snap.mean_score == 0.0 and len(metric.seen[0]["steps"]) == 1


def test_exception_is_scored_zero_with_reason(fake: FakeModel) -> None:
    rows = examples(4)

    def flaky(prompt: Prompt, input: str, call: Callable[..., str]) -> str:
        if input == rows[1].input:
            raise ValueError("could not parse the label")
        return two_step(prompt, input, call)

    snap = evaluate(flaky, rows)
    failed = snap.samples[1]
    assert failed.error == "pipeline failed: ValueError: could not parse the label"
    assert failed.score == 0.0 and failed.scores == {"exact": 0.0}
    assert "could not parse" in failed.feedback["exact"]
    assert snap.n_errors == 1 and snap.mean_score == pytest.approx(0.75)


@pytest.mark.parametrize(
    ("returned", "reason"),
    [(None, "no output"), ({"text": "x"}, "without 'output'"), (("x", [1]), "bad trace")],
)
def test_bad_return_values_fail_the_example(fake: FakeModel, returned: Any, reason: str) -> None:
    snap = evaluate(lambda prompt, input: returned, examples(1))
    assert reason in str(snap.samples[0].error)


def test_sync_timeout_fires_and_discards_the_thread(fake: FakeModel) -> None:
    late: list[BaseException] = []
    released: list[bool] = []
    release, done = threading.Event(), threading.Event()

    def slow(prompt: Prompt, input: str, call: Callable[..., str]) -> str:
        # Held until evaluate() has returned: if it waited for this thread, it never would,
        # and the wait below would time out (False) instead of being released.
        released.append(release.wait(60))
        try:
            call(input)
        except BaseException as exc:  # noqa: BLE001 - the example timed out: calls must raise
            late.append(exc)
        if len(late) == 2:
            done.set()
        return "late"

    snap = evaluate(slow, examples(2), timeout=0.2)
    release.set()
    assert {s.error for s in snap.samples} == {"pipeline failed: timeout after 0.2s"}
    assert done.wait(60) and released == [True, True]
    assert {type(exc).__name__ for exc in late} == {"PipelineTimeout"}
    assert not fake.requests  # the late threads' calls never reached the model


def test_async_timeout_cancels_the_coroutine(fake: FakeModel) -> None:
    cancelled: list[bool] = []

    async def slow(prompt: Prompt, input: str, call: Any) -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    snap = evaluate(slow, examples(2), timeout=0.2)
    # The timeout, not the 30 s sleep, ended both examples: they were cancelled, with its error.
    assert {s.error for s in snap.samples} == {"pipeline failed: timeout after 0.2s"}
    assert cancelled == [True, True]


def test_async_pipeline_awaits_call(fake: FakeModel) -> None:
    async def run(prompt: Prompt, input: str, call: Any) -> str:
        label = await call(
            [{"role": "system", "content": prompt}, {"role": "user", "content": input}],
            step="classify",
        )
        return str(await call(label, model="fake/polisher", step="polish"))

    snap = evaluate(run, examples(3))
    assert snap.mean_score == 1.0 and len(snap.samples[0].trace or []) == 2


def test_provider_error_inside_a_pipeline_stops_the_run() -> None:
    import litellm

    def fault(request: FakeRequest, n: int) -> BaseException | None:
        return litellm.AuthenticationError(message="bad key", llm_provider="openai", model="x")

    FakeModel(pipeline_responder, fault=fault).install()

    def swallowing(prompt: Prompt, input: str, call: Callable[..., str]) -> str:
        try:
            return call(input)
        except Exception:  # noqa: BLE001 - the user code hides it; the run must still stop
            return "fallback"

    with pytest.raises(ProviderError, match="permanent"):
        evaluate(swallowing, examples(1))


def test_pipeline_gets_the_components_of_the_candidate(fake: FakeModel) -> None:
    spec = PromptSpec({"classify": "Say the label.", "style": "Be brief."})
    seen: list[dict[str, str]] = []

    def run(prompt: Prompt, input: str) -> str:
        seen.append(dict(prompt.components))
        return "x"

    edited = {"classify": "Name the label.\n\nUse one word.", "style": "Be brief."}
    evaluate(run, examples(1), prompt=spec.render(edited), spec=spec)
    assert seen == [edited]


def test_components_of_templates_and_plain_prompts() -> None:
    spec = PromptSpec({"a": "A text", "b": "B text"}, template="<a>{a}</a>\n<b>{b}</b>")
    assert components_of(spec, spec.render({"a": "new A", "b": "B text"})) == {
        "a": "new A",
        "b": "B text",
    }
    assert components_of(spec, "rewritten as one text") == {}
    assert components_of(None, "plain") == {"system": "plain"}


def test_a_keyword_only_example_parameter_receives_the_row(fake: FakeModel) -> None:
    def run(prompt: Prompt, input: str, *, example: Example) -> str:
        return str(example.ideal) if example.input == input else "mismatch"

    assert pipeline_from_function(run).takes_example
    assert not pipeline_from_function(two_step).takes_example
    assert evaluate(run, examples(4)).mean_score == 1.0

    async def awaited(prompt: Prompt, input: str, call: Any, *, example: Example) -> str:
        return str(example.ideal)

    assert evaluate(awaited, examples(4)).mean_score == 1.0
