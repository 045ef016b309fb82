"""Heavy transient faults: a call keeps retrying while the provider makes progress.

At 60% injected faults a fixed 6 retries failed ~2.8% of calls (0.6^7), and one such call
stopped the whole run. A call now gives up after ``max_retries`` only when the provider answered
nothing for ``progress_window`` seconds (or after ``max_retries_with_progress``); a provider that
answers nothing at all still fails the call after ``max_retries``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from reflex.errors import TransientProviderError
from reflex.models.client import Completion, ModelSpec, ProviderClient
from reflex.models.retry import RetryPolicy
from reflex.models.runner import LoopRunner
from reflex.testing.endpoint import FaultPlan, serve

FAST = RetryPolicy(max_retries=6, base_delay=0.001, max_delay=0.005)
KINDS = ("500", "503", "drop")


@pytest.fixture(scope="module")
def runner() -> Iterator[LoopRunner]:
    loop = LoopRunner()
    yield loop
    loop.close()


def _ask_all(runner: LoopRunner, client: ProviderClient, url: str, n: int) -> list[Completion]:
    spec = ModelSpec("openai/m", api_base=url, extra={"api_key": "sk-none"})
    messages = [[{"role": "user", "content": f"row {i}"}] for i in range(n)]

    async def run_all() -> list[Completion]:
        return list(await asyncio.gather(*(client.complete(spec, m) for m in messages)))

    return runner.run(run_all())


def test_sixty_percent_faults_complete_every_call(runner: LoopRunner) -> None:
    with serve(faults=FaultPlan(rate=0.6, kinds=KINDS, seed=3)) as url:
        client = ProviderClient(max_workers=16, retry=FAST)
        outs = _ask_all(runner, client, url, 150)
        stats = url.stats()
    assert [o.text for o in outs] == [f"row {i}" for i in range(150)]
    # Some calls needed more than max_retries retries: the old rule would have failed them.
    assert max(o.attempts for o in outs) > FAST.max_retries + 1
    assert client.ledger.total().retries == stats.fault_total


def test_a_provider_that_answers_nothing_still_fails_after_max_retries(
    runner: LoopRunner,
) -> None:
    with serve(faults=FaultPlan(rate=1.0, kinds=("500",))) as url:
        client = ProviderClient(retry=FAST)
        with pytest.raises(TransientProviderError) as caught:
            _ask_all(runner, client, url, 1)
        assert url.stats().requests == FAST.max_retries + 1
    assert "still failing after 7 attempts" in str(caught.value)


def test_the_give_up_rule() -> None:
    policy = RetryPolicy(max_retries=2, progress_window=10.0, max_retries_with_progress=5)
    assert not policy.gives_up(2, None)
    assert policy.gives_up(3, None) and policy.gives_up(3, 10.0)
    assert not policy.gives_up(3, 1.0) and not policy.gives_up(5, 9.9)
    assert policy.gives_up(6, 0.0)
