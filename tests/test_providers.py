"""In-process LiteLLM providers (reflex.models.providers, ``register_provider``): a serial one
answers in the order the calls were made."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from reflex.models.client import ClientSettings, ModelSpec, ProviderClient
from reflex.models.providers import register_provider
from reflex.models.runner import LoopRunner


def _ordered_provider(name: str, serial: bool) -> list[str]:
    """An in-process provider that answers in its own thread; early calls compute longest.

    Serial, the delays would reorder the answers of a client that did not keep the calls'
    order. Not serial (the control), the first call waits inside the provider until the second
    has answered, which only concurrent calls can do: the order is the provider's, not the
    client's, whatever the machine's speed.
    """
    arrived: list[str] = []
    answered = threading.Condition()

    def factory(litellm: Any) -> Any:
        class Slow(litellm.CustomLLM):  # type: ignore[misc]
            def completion(self, model: str, messages: list[dict[str, str]], **_: Any) -> Any:
                index = int(messages[-1]["content"])
                if serial:
                    threading.Event().wait(0.012 * (6 - index))  # call 0 slowest, call 5 fastest
                with answered:
                    if not serial and index == 0:
                        # The timeout is a hang guard only: call 1 runs beside this one.
                        answered.wait_for(lambda: "1" in arrived, timeout=300)
                    arrived.append(messages[-1]["content"])
                    answered.notify_all()
                return litellm.ModelResponse(
                    choices=[{"index": 0, "message": {"role": "assistant", "content": "ok"}}]
                )

            async def acompletion(self, model: str, messages: Any, *a: Any, **kw: Any) -> Any:
                return await asyncio.to_thread(self.completion, model, messages)

        return Slow()

    register_provider(name, factory, serial=serial)
    return arrived


@pytest.mark.parametrize("serial", [True, False])
def test_a_serial_provider_answers_in_the_order_the_calls_were_made(
    runner: LoopRunner, litellm: Any, serial: bool
) -> None:
    name = f"ordered{int(serial)}"
    arrived = _ordered_provider(name, serial)
    client = ProviderClient(ClientSettings(max_workers=6), cache=None)

    async def go() -> None:
        asks = [
            client.complete(ModelSpec(f"{name}/m"), [{"role": "user", "content": str(i)}])
            for i in range(6)
        ]
        await asyncio.gather(*asks)

    runner.run(go())
    if serial:  # one call at a time, first come first served: the same order every run
        assert arrived == ["0", "1", "2", "3", "4", "5"]
    else:  # the control: concurrent calls finish in whatever order the provider answers
        assert arrived.index("1") < arrived.index("0")
        assert sorted(arrived) == ["0", "1", "2", "3", "4", "5"]
