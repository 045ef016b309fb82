"""Test kit for our tests and for plugin authors.

``from reflex.testing import FakeModel, FakeRequest, RecordingCallback``: a deterministic fake
model behind the same LiteLLM boundary a real one uses, and a callback that records every hook.
``reflex.testing.endpoint`` serves an OpenAI-compatible endpoint for end-to-end tests;
``reflex.testing.pytest_plugin`` gives the fixtures ``fake_model``, ``recording_callback`` and
``register_plugin``.
"""

from reflex.testing.fakes import FakeModel, FakeRequest, RecordingCallback

__all__ = ["FakeModel", "FakeRequest", "RecordingCallback"]
