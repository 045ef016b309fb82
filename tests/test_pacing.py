"""Router pacing: a deployment's calls spaced by its rpm, the free deployment picked first."""

from __future__ import annotations

import pytest

from reflex.models.runner import LoopRunner


def test_pacing_spaces_a_deployments_calls_and_picks_the_free_one(
    monkeypatch: pytest.MonkeyPatch, runner: LoopRunner
) -> None:
    from reflex.models import pacing

    monkeypatch.setattr(pacing.time, "monotonic", lambda: 100.0)  # a frozen clock
    monkeypatch.setattr(pacing, "_PACED", {})
    backend = pacing.local_pacing()
    a, b, bare = (
        {"model_info": {"id": name}, "litellm_params": {"rpm": 600}} for name in ("a", "b", "c")
    )
    bare["litellm_params"] = {}
    assert pacing.interval_of(a) == pytest.approx(0.1) and pacing.interval_of(bare) is None
    pacing._PACED.update({"a": backend, "b": backend})

    async def steps() -> tuple[list[float], list[str], list[str]]:
        waits = [await backend.reserve("a", 0.1) for _ in range(3)]
        free = [d["model_info"]["id"] for d in await pacing.soonest([a, b])]
        mixed = [d["model_info"]["id"] for d in await pacing.soonest([a, bare])]
        return waits, free, mixed

    waits, free, mixed = runner.run(steps())
    assert waits == pytest.approx([0.0, 0.1, 0.2])  # 60 / rpm apart
    assert free == ["b"]  # a's next slot is 0.3 s away, b is free now
    assert mixed == ["a", "c"]  # an unpaced deployment: the Router decides alone


def test_the_router_pacer_is_no_reader_of_litellm_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    """Installed once per process, the pacer used to count as a LiteLLM callback: every later
    call of the process lost the lean transport and its client processes (test_offload failed
    after any Router test had run in the same process)."""
    from reflex.models import pacing
    from reflex.models.litellm_call import _LITELLM_CALLBACK_LISTS, litellm_listens
    from reflex.models.providers import load_litellm

    litellm = load_litellm()
    for name in _LITELLM_CALLBACK_LISTS:  # restored after the test
        monkeypatch.setattr(litellm, name, [], raising=False)
    monkeypatch.setattr(pacing, "_INSTALLED", [])
    pacing.install_pacer(litellm, pacing.local_pacing(), [])
    assert litellm.callbacks == pacing._INSTALLED != []
    assert not litellm_listens(litellm)
    litellm.success_callback.append(object())  # a user's logger is a reader
    assert litellm_listens(litellm)
