"""``--max-workers`` counted on the wire: a slot is held only while a request is in flight.

A call through LiteLLM spends CPU before the request leaves (building it) and after the answer
arrives (parsing, usage, cost). If the run's concurrency limit were held around the whole call,
a slot would sit idle during that CPU work and a run of ``C`` workers at latency ``L`` would
take ``N·(L + cpu)/C`` instead of ``N·L/C``. So, for the providers LiteLLM sends through the
OpenAI SDK's HTTP client, the slot is taken in the HTTP transport, around the request and its
body, and the CPU work of other calls overlaps the waits.

How it fits together:

- ``install(litellm)`` gives LiteLLM (``litellm.aclient_session``) LiteLLM's own default async
  HTTP client with its transports wrapped by :class:`GatedTransport` -- unless the user set a
  session of their own, which is then left alone.
- The caller (``ProviderClient``) puts a :class:`Ticket` in a context variable for each call.
  The transport marks the ticket ``seen`` and, unless the caller already ``held`` a slot, holds
  ``ticket.limit`` from sending the request until the response body is closed.
- A model whose calls the transport has not been seen carrying (a custom provider, the local
  model, a provider with its own HTTP stack) is called with the slot held around the whole call,
  exactly as before: the limit is never exceeded, whichever path LiteLLM takes.

With no ticket (a LiteLLM call made outside a run) the transport passes the request through.

"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import logging
import os
from dataclasses import dataclass
from typing import Any

__all__ = ["Ticket", "install", "ticket_var"]

logger = logging.getLogger(__name__)


@dataclass
class Ticket:
    """One call's pass through the transport: which limit to take, and what happened."""

    limit: asyncio.Semaphore
    held: bool  # the caller already holds a slot for the whole call
    seen: bool = False  # the gated transport carried this call's request


ticket_var: contextvars.ContextVar[Ticket | None] = contextvars.ContextVar(
    "reflex_inflight_ticket", default=None
)

_INSTALLED: dict[str, Any] = {}


def install(litellm: Any) -> bool:
    """Route LiteLLM's OpenAI-SDK HTTP traffic through the gate; True when it is in place.

    ``REFLEX_WIRE_GATE=0`` turns it off (every call then holds its slot end to end).
    """
    if "client" in _INSTALLED:
        return litellm.aclient_session is _INSTALLED["client"]
    if os.environ.get("REFLEX_WIRE_GATE", "1") == "0" or litellm.aclient_session is not None:
        _INSTALLED["client"] = None
        return False
    try:
        from litellm.llms.openai.common_utils import BaseOpenAILLM

        from reflex._wire import GatedTransport

        client: Any = BaseOpenAILLM._get_async_http_client()
        client._transport = GatedTransport(client._transport)
        client._mounts = {
            pattern: GatedTransport(transport) if transport is not None else None
            for pattern, transport in client._mounts.items()
        }
    except Exception as exc:  # noqa: BLE001 - a LiteLLM without these internals: no gate
        logger.debug("wire gate not installed: %s", exc)
        _INSTALLED["client"] = None
        return False
    litellm.aclient_session = client
    _INSTALLED["client"] = client
    atexit.register(_uninstall, litellm)
    return True


def _uninstall(litellm: Any) -> None:
    # At exit, while modules are still whole: dropped later, LiteLLM's transport finalizer runs
    # during interpreter teardown and prints "Exception ignored in ... __del__".
    if litellm.aclient_session is _INSTALLED.get("client"):
        litellm.aclient_session = None
    _INSTALLED["client"] = None
