"""Per-call overhead that grows with the number of calls handed over at once (issue 21)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Mapping, Sequence

from reflex.models.client import ClientSettings, Completion, ModelSpec, ProviderClient, load_litellm
from reflex.models.runner import LoopRunner
from reflex.models.usage import Role


def test_calls_inside_complete_are_bounded(runner: LoopRunner) -> None:
    client = ProviderClient(ClientSettings(max_workers=2))
    inside, peak = 0, 0

    async def counting(
        spec: ModelSpec, messages: Sequence[Mapping[str, str]], role: Role
    ) -> Completion:
        nonlocal inside, peak
        inside += 1
        peak = max(peak, inside)
        await asyncio.sleep(0.001)
        inside -= 1
        return Completion("x", 1, 1, None, cached=False, attempts=1)

    client._complete = counting  # type: ignore[method-assign]
    spec = ModelSpec("fake/m")

    async def many() -> list[Completion]:
        calls = [client.complete(spec, [{"role": "user", "content": f"q{i}"}]) for i in range(100)]
        return list(await asyncio.gather(*calls))

    assert len(runner.run(many())) == 100
    assert peak == 2 * 2 + 16


def test_litellms_objects_are_kept_out_of_garbage_collections() -> None:
    load_litellm()
    assert gc.get_freeze_count() > 100_000
