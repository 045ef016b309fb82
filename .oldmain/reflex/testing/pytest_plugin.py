"""pytest fixtures for plugin authors, loaded automatically through the ``pytest11`` entry point.

Installing ``aevyra-reflex`` makes these fixtures available in any test suite:

- ``fake_model``: a :class:`reflex.testing.FakeModel` installed as the ``fake/...`` provider.
  It answers with ``fake_responder`` (echo by default); override that fixture to script answers.
- ``recording_callback``: a fresh :class:`reflex.testing.RecordingCallback`.
- ``register_plugin``: ``register_plugin(plugin, name=None) -> name`` registers a plugin for one
  test, exactly as an installed entry point would, and unregisters it afterwards.

This module is imported by every pytest session in an environment where aevyra-reflex is
installed, so it imports nothing heavy until a fixture is used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from reflex.testing import FakeModel, FakeRequest, RecordingCallback

__all__ = ["fake_model", "fake_responder", "recording_callback", "register_plugin"]

RegisterPlugin = Callable[..., str]


@pytest.fixture
def fake_responder() -> Callable[[FakeRequest], str]:
    """How ``fake_model`` answers: echoes the last user message. Override to script answers."""
    return lambda request: request.user


@pytest.fixture
def fake_model(fake_responder: Callable[[FakeRequest], str]) -> FakeModel:
    """A deterministic model behind the LiteLLM boundary: call it as ``fake/<anything>``."""
    from reflex.testing import FakeModel

    return FakeModel(fake_responder).install()


@pytest.fixture
def recording_callback() -> RecordingCallback:
    """A callback that records every lifecycle call: ``.hooks`` names, ``.calls`` arguments."""
    from reflex.testing import RecordingCallback

    return RecordingCallback()


@pytest.fixture
def register_plugin() -> Iterator[RegisterPlugin]:
    """Register plugins for the current test only; they are unregistered when it ends."""
    from reflex.plugins import register_plugin as register
    from reflex.plugins import unregister_plugin

    names: list[str] = []

    def _register(plugin: object, name: str | None = None) -> str:
        registered = register(plugin, name)
        names.append(registered)
        return registered

    yield _register
    for name in reversed(names):
        unregister_plugin(name)  # a no-op when the test already unregistered it
