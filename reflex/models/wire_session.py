"""The lean transport's HTTP sessions: one keep-alive ``aiohttp`` session per run loop.

Invariants: a session never reads ``~/.netrc`` (``trust_env=False``: aiohttp's ``trust_env``
adds netrc credentials as basic auth, which collides with the provider's key); the proxy comes
from the environment alone (``HTTP(S)_PROXY``, ``NO_PROXY``, as :func:`env_proxy` resolves it for
a route), and is passed per request; a session is used only on the loop that made it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from reflex.models.runner import LoopRunner

if TYPE_CHECKING:
    import aiohttp

__all__ = ["env_proxy", "session"]


def env_proxy(url: str) -> tuple[str | None, aiohttp.BasicAuth | None]:
    """The proxy (and its credentials) aiohttp's ``trust_env`` would pick for ``url``, read
    from the environment alone: ``~/.netrc`` never adds credentials (see the module's text)."""
    from urllib.request import getproxies, proxy_bypass

    from aiohttp.helpers import strip_auth_from_url
    from yarl import URL

    parts = urlsplit(url)
    if parts.hostname is None or proxy_bypass(parts.hostname):
        return None, None
    proxy = getproxies().get(parts.scheme)
    if not proxy:
        return None, None
    bare, auth = strip_auth_from_url(URL(proxy))
    if bare.scheme != "http":  # aiohttp takes plain-HTTP proxies only (it warns and skips)
        return None, None
    return str(bare), auth


_SESSIONS: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}


def _new_session() -> aiohttp.ClientSession:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
    return aiohttp.ClientSession(connector=connector, trust_env=False)  # proxy: per route


@contextlib.asynccontextmanager
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    """The run loop's keep-alive HTTP session (aiohttp sessions are bound to their loop).

    The process's run loop (:class:`LoopRunner`) keeps one session until it closes; a call made
    on any other event loop (which may close without telling anyone) gets its own session.
    """
    loop = asyncio.get_running_loop()
    runner = LoopRunner.current()
    if runner is None or runner.loop is not loop:
        async with _new_session() as own:
            yield own
        return
    session = _SESSIONS.get(loop)
    if session is None or session.closed:
        session = _SESSIONS[loop] = _new_session()
        runner.at_close(session.close)
    yield session
