"""The one redactor (reflex/redact.py), function by function: URLs, texts, command lines, JSON
data and log records lose their credentials and keep everything else."""

from __future__ import annotations

import logging
import sys

import pytest

from reflex.redact import (
    REDACTED,
    ScrubFilter,
    is_secret_name,
    redact_argv,
    redact_data,
    redact_url,
    redacted_argv,
    scrub,
    scrubbed_logs,
    url_secrets,
)

URL = "https://user:pa/ss@llm.internal:8443/v1?api-key=k3y&model=m"


def test_a_url_keeps_every_character_but_its_credentials() -> None:
    assert redact_url(URL) == "https://***@llm.internal:8443/v1?api-key=***&model=m"
    assert redact_url("sqlite:////abs/team.sqlite") == "sqlite:////abs/team.sqlite"
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert redact_url(None) is None and redact_url("") == ""
    assert redact_url(URL) == redact_url(URL)  # deterministic: --resume compares them


def test_the_secrets_of_a_url_are_found_raw_and_encoded() -> None:
    found = url_secrets("https://user:p%40ss@h/v1;key=abc123")
    assert {"p%40ss", "p@ss", "abc123"} <= set(found)
    assert found == sorted(found, key=len, reverse=True)
    assert url_secrets(None) == [] and url_secrets("https://h/v1") == []


def test_secret_names_are_one_pattern() -> None:
    for name in ("OPENAI_API_KEY", "api-key", "token", "password", "sig", "access_token"):
        assert is_secret_name(name), name
    for name in ("model", "temperature", "max_tokens", "run_dir"):
        assert not is_secret_name(name), name


def test_a_text_loses_the_given_urls_credentials_and_secret_environment_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-0123456789")
    text = f"calling {URL} with sk-live-0123456789 failed: pa/ss"
    clean = scrub(text, URL)
    assert "sk-live-0123456789" not in clean and "pa/ss" not in clean and "k3y" not in clean
    assert clean.startswith("calling https://user:***@llm.internal:8443/v1?api-key=***&model=m")
    assert clean.endswith("with *** failed: ***")


def test_a_command_line_is_recorded_without_credentials() -> None:
    argv = ["aevyra-reflex", "optimize", "--api-base", URL, "token=abc", "--model", "fake/m"]
    safe = redact_argv(argv)
    # The URL's password goes too, though the token holds a secret-named "api-key=".
    assert safe[3] == "https://user:***@llm.internal:8443/v1?api-key=***&model=m"
    assert safe[4] == f"token={REDACTED}"
    assert safe[:3] == argv[:3] and safe[5:] == argv[5:]
    saved = list(sys.argv)
    sys.argv[:] = argv
    try:
        with redacted_argv():
            assert sys.argv == safe
        assert sys.argv == argv  # put back after the block
    finally:
        sys.argv[:] = saved


def test_data_under_a_secret_key_is_replaced_whole_and_the_rest_keeps_its_types() -> None:
    data = {"api_key": {"nested": "x"}, "url": URL, "n": 3, "ok": True, "none": None}
    data["items"] = [{"password": "hunter22"}, "plain"]
    clean = redact_data(data, URL)
    assert clean["api_key"] == REDACTED and clean["items"] == [{"password": REDACTED}, "plain"]
    assert clean["url"] == "https://user:***@llm.internal:8443/v1?api-key=***&model=m"
    assert (clean["n"], clean["ok"], clean["none"]) == (3, True, None)


def test_log_records_are_scrubbed_at_their_source(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("reflex.test_redact")
    record = log.makeRecord(log.name, logging.WARNING, "f", 1, "to %s", (URL,), None)
    ScrubFilter(URL).filter(record)
    assert "pa/ss" not in record.getMessage() and "llm.internal" in record.getMessage()
    with caplog.at_level(logging.WARNING), scrubbed_logs(URL):
        log.warning("retrying %s", URL)
    assert "pa/ss" not in caplog.text and "k3y" not in caplog.text
    assert "retrying https://user:***@llm.internal" in caplog.text
