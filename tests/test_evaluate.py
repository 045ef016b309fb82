"""The evaluator (reflex.run.evaluate) on the fake model: every row scored by every metric,
model-graded metrics through the run's client."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import pytest

from reflex.models.client import ClientSettings, Completion, ModelSpec, ProviderClient
from reflex.models.runner import LoopRunner
from reflex.models.usage import Role
from reflex.run import evaluate as evaluate_module
from reflex.run.evaluate import Evaluator
from reflex.testing import FakeModel, FakeRequest
from reflex.types import Example, JudgeCall, Score


class _CountingMeta(type):
    """Stands in for the ModelGradedMetric protocol and counts the isinstance checks."""

    checks = 0

    def __instancecheck__(cls, instance: object) -> bool:
        _CountingMeta.checks += 1
        return hasattr(instance, "ascore") and hasattr(instance, "judge")


class _ModelGraded(metaclass=_CountingMeta):
    pass


class Exact:
    name = "exact"
    requires_reference = True

    def score(self, output: str, example: Example) -> Score:
        return Score(1.0 if output == example.ideal else 0.0)


class Graded:
    name = "graded"
    requires_reference = False
    judge = ModelSpec("fake/judge")

    def score(self, output: str, example: Example) -> Score:
        raise AssertionError("the evaluator scores a model-graded metric through ascore")

    async def ascore(self, output: str, example: Example, call: JudgeCall) -> Score:
        verdict = await call([{"role": "user", "content": f"grade {example.id}: {output}"}])
        return Score(1.0 if verdict else 0.0)


def _answer(request: FakeRequest) -> str:
    return "yes" if request.model == "fake/judge" else "a"


@pytest.fixture
def fake() -> FakeModel:
    return FakeModel(_answer).install()


def _rows(n: int) -> list[Example]:
    return [
        Example(id=f"r{i}", messages=({"role": "user", "content": f"q{i}"},), ideal="a")
        for i in range(n)
    ]


def test_which_metrics_are_model_graded_is_checked_once_per_evaluator(
    fake: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A runtime protocol check costs ~20 us; once per row and metric it ran on the event loop
    # between a slot's answer and the next request (bench/overlap.py).
    monkeypatch.setattr(evaluate_module, "ModelGradedMetric", _ModelGraded)
    monkeypatch.setattr(_CountingMeta, "checks", 0)
    client = ProviderClient(ClientSettings(max_workers=4))
    evaluator = Evaluator(client, [ModelSpec("fake/task")], [Exact(), Graded()], {})
    snapshot = LoopRunner.shared().run(evaluator.evaluate("Answer.", _rows(30), "val"))
    assert [s.scores for s in snapshot.samples] == [{"exact": 1.0, "graded": 1.0}] * 30
    assert client.ledger.by_role["judge"].calls == 30  # the graded metric went through ascore
    assert snapshot.model_graded
    assert _CountingMeta.checks <= 4  # 2 metrics, once for the rows and once for the snapshot


class _WriterTask(ProviderClient):
    """A client whose request leaves from a task of its own, as aiohttp writes it: ``log`` gets
    each call's start and the moment its request is sent."""

    def __init__(self, max_workers: int) -> None:
        super().__init__(ClientSettings(max_workers=max_workers))
        self.log: list[str] = []

    async def complete(
        self, spec: ModelSpec, messages: Sequence[Mapping[str, object]], role: Role = "task"
    ) -> Completion:
        row = str(messages[-1]["content"])
        self.log.append(f"start {row}")

        async def write() -> None:
            self.log.append(f"sent {row}")

        await asyncio.ensure_future(write())
        return Completion("a", 1, 1, 0.0, cached=False, attempts=1)


def test_each_call_of_the_first_round_is_sent_before_the_next_one_starts() -> None:
    client = _WriterTask(max_workers=3)
    evaluator = Evaluator(client, [ModelSpec("fake/task")], [Exact()], {})
    snapshot = LoopRunner.shared().run(evaluator.evaluate("Answer.", _rows(6), "val"))
    first_round = ["start q0", "sent q0", "start q1", "sent q1", "start q2", "sent q2"]
    assert client.log[:6] == first_round  # not every row's start before the first request
    assert sorted(client.log[6:]) == [
        "sent q3",
        "sent q4",
        "sent q5",
        "start q3",
        "start q4",
        "start q5",
    ]
    assert [s.example_id for s in snapshot.samples] == [f"r{i}" for i in range(6)]  # row order
