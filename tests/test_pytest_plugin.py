"""The pytest11 fixtures for plugin authors (reflex/testing/pytest_plugin.py), run in a pytest
session of their own with no conftest.py, as a plugin's test suite runs them."""

from __future__ import annotations

import textwrap

import pytest

# A plugin author's test module: the fixtures come from the entry point alone.
SUITE = """
from reflex.models.client import ModelSpec, ProviderClient
from reflex.models.runner import LoopRunner
from reflex.plugins import get_registry
import pytest


class Shouting:
    name = "shouting"
    requires_reference = False

    def score(self, output, example):
        raise NotImplementedError


class Plugin:
    from reflex.api import hookimpl

    @hookimpl
    def register_metrics(self, register):
        register("shouting_test", Shouting)


def ask(text):
    client = ProviderClient(cache=None)
    messages = [{"role": "user", "content": text}]
    return LoopRunner.shared().run(client.complete(ModelSpec("fake/m"), messages)).text


def test_1_the_fake_model_echoes_by_default(fake_model):
    assert ask("hello there") == "hello there"
    assert [r.user for r in fake_model.requests] == ["hello there"]


class TestScripted:
    @pytest.fixture
    def fake_responder(self):
        return lambda request: request.user.upper()

    def test_2_an_overridden_responder_scripts_the_answers(self, fake_model):
        assert ask("quiet") == "QUIET"


def test_3_a_plugin_is_registered_for_one_test(register_plugin, recording_callback):
    assert register_plugin(Plugin(), name="shouting_plugin") == "shouting_plugin"
    assert "shouting_test" in get_registry().metrics
    assert recording_callback.calls == [] and recording_callback.hooks == []


def test_4_and_unregistered_after_it():
    assert "shouting_test" not in get_registry().metrics
"""


def test_a_plugin_s_suite_gets_the_fixtures_from_the_entry_point(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plugin_suite=textwrap.dedent(SUITE))
    # In-process (litellm is already imported); pytester restores sys.modules afterwards.
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
