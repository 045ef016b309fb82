"""A starting prompt named by a URI: which texts are one, the plugin hook that reads them
(``register_prompt_sources``), and what the run records (``config.prompt_source``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_engine import builder

from reflex.api import ConfigurationError, PromptSourceRegistrar, PromptSpec, hookimpl
from reflex.errors import PluginError
from reflex.optimizer import prompt_spec
from reflex.plugins import get_registry
from reflex.run.prompt_sources import prompt_uri, resolve_prompt_uri
from reflex.testing import FakeModel

NOTES = {"notes:/sentiment": "Classify the sentiment. Answer with one word."}


class NotesPlugin:
    @hookimpl
    def register_prompt_sources(self, register: PromptSourceRegistrar) -> None:
        register("notes", self.read)

    @staticmethod
    def read(uri: str) -> PromptSpec:
        if uri not in NOTES:
            raise ConfigurationError(f"{uri}: no such note")
        spec = PromptSpec.single(NOTES[uri])
        return PromptSpec(spec.components, spec.template, spec.fmt, source=f"{uri}#1")


def test_which_texts_are_uris(register_plugin: Any, tmp_path: Path) -> None:
    assert prompt_uri("prompts:/cat/1") == "prompts:/cat/1"  # MLflow's, plugin or not
    assert prompt_uri("notes:/sentiment") is None  # no plugin reads notes:/ yet
    register_plugin(NotesPlugin(), "notes")
    assert prompt_uri("notes:/sentiment") == "notes:/sentiment"
    assert prompt_uri(Path("notes:/sentiment")) == "notes:/sentiment"
    assert prompt_uri("Classify notes:/sentiment") is None  # a text with spaces is a prompt
    assert prompt_uri("prompts:/cat/1\nmore") is None
    existing = tmp_path / "prompts:" / "cat"
    existing.parent.mkdir()
    existing.write_text("a file\n")
    assert prompt_uri(existing) is None  # a path that exists is a file


def test_hook_register_prompt_sources(
    register_plugin: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    register_plugin(NotesPlugin(), "notes")
    assert get_registry().info["notes"].prompt_sources == ["notes"]
    spec = prompt_spec("notes:/sentiment")
    assert spec.render() == NOTES["notes:/sentiment"] and spec.source == "notes:/sentiment#1"
    result = builder(tmp_path).run("notes:/sentiment")
    config = json.loads((Path(str(result.run_dir)) / "config.json").read_text())
    assert config["prompt_source"] == "notes:/sentiment#1"
    with pytest.raises(ConfigurationError, match="notes:/other: no such note"):
        prompt_spec("notes:/other")


def test_a_scheme_registered_twice_names_both_plugins(register_plugin: Any) -> None:
    register_plugin(NotesPlugin(), "notes")
    with pytest.raises(PluginError, match="prompt source 'notes' is registered by both"):
        register_plugin(NotesPlugin(), "notes-again")


def test_a_plain_prompt_records_no_source(fake_model: FakeModel, tmp_path: Path) -> None:
    result = builder(tmp_path).run("Classify the sentiment.")
    config = json.loads((Path(str(result.run_dir)) / "config.json").read_text())
    assert config["prompt_source"] == ""


def test_a_plugin_that_returns_no_prompt_is_refused(register_plugin: Any) -> None:
    class Broken:
        @hookimpl
        def register_prompt_sources(self, register: PromptSourceRegistrar) -> None:
            register("broken", lambda uri: "not a spec")

    register_plugin(Broken(), "broken")
    assert resolve_prompt_uri("broken:/x") == "not a spec"
    with pytest.raises(ConfigurationError, match="broken:/x: its plugin returned str"):
        prompt_spec("broken:/x")
