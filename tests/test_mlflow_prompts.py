"""MLflow prompt versions as reflex prompts (text, text with variables, chat) and back, read
from a real sqlite store; an unknown prompt, version or alias and an unset store are one line."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient
from mlflow.tracking._tracking_service import utils as tracking_utils
from test_mlflow_registry import store  # noqa: F401 - the sqlite store fixture

from reflex.api import ConfigurationError
from reflex.optimizer import prompt_spec
from reflex_mlflow import load_prompt, prompt_from_version
from reflex_mlflow.prompts import parse_prompt_uri, registry_template

CHAT = [
    {"role": "system", "content": "Answer from the text."},
    {"role": "user", "content": "Text: {{context}}\nQ: {{question}}"},
]


@pytest.fixture
def client(store: str) -> MlflowClient:  # noqa: F811
    client = MlflowClient(tracking_uri=store)
    client.register_prompt("plain", template="Classify the sentiment.")
    client.register_prompt("asked", template="Classify: {{review}}")
    client.register_prompt("chat", template=CHAT)
    client.set_prompt_alias("chat", "production", 1)
    return client


def test_each_kind_of_version_becomes_our_prompt_and_goes_back(client: MlflowClient) -> None:
    plain = prompt_from_version(client.get_prompt_version("plain", 1))
    assert plain.is_single and plain.render() == "Classify the sentiment."
    assert plain.source == "prompts:/plain/1"
    assert registry_template(plain.render(), text_source=True) == "Classify the sentiment."

    asked = prompt_from_version(client.get_prompt_version("asked", 1))
    assert asked.messages == [{"role": "user", "content": "Classify: {{review}}"}]
    assert asked.variables == ["review"]
    assert registry_template(asked.render(), text_source=True) == "Classify: {{review}}"

    chat = prompt_from_version(client.get_prompt_version("chat", 1))
    assert (
        chat.messages == CHAT and chat.fmt == "chat" and chat.variables == ["context", "question"]
    )
    assert registry_template(chat.render(), text_source=False) == CHAT


def test_load_prompt_by_version_and_alias(client: MlflowClient, store: str) -> None:  # noqa: F811
    by_alias = load_prompt("prompts:/chat@production", tracking_uri=store)
    assert by_alias.messages == CHAT and by_alias.source == "prompts:/chat/1"
    assert load_prompt("prompts:/plain/1", tracking_uri=store).render() == "Classify the sentiment."


def test_the_builder_and_prompt_spec_read_the_uri_from_the_process_store(
    client: MlflowClient,
    store: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    spec = prompt_spec("prompts:/chat@production")
    assert spec.messages == CHAT and spec.source == "prompts:/chat/1"


@pytest.mark.parametrize(
    ("uri", "words"),
    [
        ("prompts:/nope/1", "no prompt named 'nope'"),
        ("prompts:/plain/7", "prompt 'plain' has no version 7"),
        ("prompts:/chat@staging", "prompt 'chat' has no alias @staging"),
        ("prompts:/chat", "not a prompt URI; write prompts:/NAME/VERSION or prompts:/NAME@ALIAS"),
    ],
)
def test_bad_uris_are_one_line(
    client: MlflowClient,
    store: str,  # noqa: F811
    uri: str,
    words: str,
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_prompt(uri, tracking_uri=store)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_no_store_configured_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(tracking_utils, "_tracking_uri", None)
    with pytest.raises(ConfigurationError, match="no MLflow store to read it from"):
        load_prompt("prompts:/chat/1")


def test_parse_prompt_uri() -> None:
    assert parse_prompt_uri("prompts:/cat/3") == ("cat", "3", None)
    assert parse_prompt_uri("prompts:/cat@production") == ("cat", None, "production")
