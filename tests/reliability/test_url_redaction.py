"""``redact_url`` on the passwords RFC 3986 parsing gets wrong, and on random ones.

A password may hold ``/``, ``#``, ``;``, ``?``, ``@``, ``:`` or ``%`` unescaped (base64 ones
hold ``/``): the userinfo ends at the last ``@`` a host follows, not at the first ``/``, ``?``
or ``#``. Secret-named path parameters (``/v1;key=S``) and query parameters are redacted too,
and every other character is kept as it was (``sqlite:////abs/path`` must survive).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_rows
from hypothesis import given, settings
from hypothesis import strategies as st
from test_secrets import every_file_mentioning

from reflex import PromptOptimizer
from reflex.config import RunConfig
from reflex.redact import redact_url, scrub, url_secrets
from reflex.testing import FakeModel


@pytest.mark.parametrize(
    ("url", "redacted", "secret"),
    [
        ("redis://:pa/ss@h:1/0", "redis://***@h:1/0", "pa/ss"),
        ("postgresql://u:p#w@h/db", "postgresql://***@h/db", "p#w"),
        ("http://h/v1;key=S3CR", "http://h/v1;key=***", "S3CR"),
        ("http://h/v1;token=S3CR;v=1?a=1", "http://h/v1;token=***;v=1?a=1", "S3CR"),
        ("https://h/v1?a=1;api-key=S3CR", "https://h/v1?a=1;api-key=***", "S3CR"),
        (
            "postgresql://u:a?b;c@h:5432/db?sslmode=require",
            "postgresql://***@h:5432/db?sslmode=require",
            "a?b;c",
        ),
        ("redis://:pa@ss@[::1]:6379/0", "redis://***@[::1]:6379/0", "pa@ss"),
        ("http://h/#access_token=S3CR&x=1", "http://h/#access_token=***&x=1", "S3CR"),
    ],
)
def test_passwords_with_reserved_characters_are_redacted(
    url: str, redacted: str, secret: str
) -> None:
    assert redact_url(url) == redacted
    assert redact_url(redacted) == redacted  # stable: resume compares redacted forms
    assert secret in url_secrets(url)
    assert secret not in scrub(f"cannot reach {url} (password {secret!r})", url)


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:////abs/team@x/cache.sqlite",
        "sqlite+pysqlite:////abs/team.sqlite",
        "http://localhost:8000/v1?api-version=2024-06&q=a+b%20c",
        "file:///home/me/@work/x.db",
    ],
)
def test_urls_without_credentials_are_kept_byte_for_byte(url: str) -> None:
    assert redact_url(url) == url and url_secrets(url) == []


PASSWORD = st.text(alphabet=st.sampled_from("aZ09/#;?@:%&=+._~-!$ é*"), min_size=1, max_size=24)


@settings(max_examples=400, deadline=None)
@given(password=PASSWORD, scheme=st.sampled_from(["redis", "postgresql", "http", "rediss"]))
def test_no_random_password_survives_redaction(password: str, scheme: str) -> None:
    # The last "@" of the URL is the one before the host, so the userinfo is exactly
    # "user:<password>" whatever the password holds: the redacted form is fixed.
    url = f"{scheme}://user:{password}@host:1/db"
    assert redact_url(url) == f"{scheme}://***@host:1/db"
    if len(password) >= 3 and "*" not in password:  # shorter ones are not scrubbed from text
        # ("*" could be rebuilt from the "***" put in place of another secret)
        text = f"connect {url} failed: password {password} rejected ({password!r})"
        assert password not in scrub(text, url)


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("ab:/@?#;&=%*key[]1"), max_size=40))
def test_redaction_is_idempotent_on_random_text(text: str) -> None:
    once = redact_url(text)
    assert redact_url(once) == once


@pytest.mark.services
def test_cache_url_password_with_reserved_characters_never_written(
    postgres_url: str, tmp_path: Path, fake_model: FakeModel
) -> None:
    # A real PostgreSQL cache (trust auth: any password is accepted), its password full of the
    # characters RFC parsing stops at; SQLAlchemy reads it as the password.
    password = "Pg/CANARY#7;x?y"
    url = postgres_url.replace("postgresql://reflex@", f"postgresql://reflex:{password}@")
    assert url != postgres_url
    result = (
        PromptOptimizer()
        .set_dataset(make_rows(12))
        .add_provider("fake/task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .set_run_dir(tmp_path / "runs")
        .set_cache_url(url)
        .configure(max_iterations=1)
        .run("Classify the sentiment.")
    )
    assert result.usage["task"]["calls"] > 0
    [config] = (tmp_path / "runs").rglob("config.json")
    saved = json.loads(config.read_text(encoding="utf-8"))["cache_url"]
    assert saved == redact_url(url) and saved.startswith("postgresql://***@127.0.0.1:")
    for part in ("CANARY", "Pg/CANARY", "Pg%2FCANARY"):
        assert every_file_mentioning(tmp_path, part) == []


def test_run_config_never_serializes_a_reserved_character_password() -> None:
    for url in ("redis://:pa/ss@h:1/0", "postgresql://u:p#w@h/db", "http://h/v1;key=S3CR"):
        dumped = RunConfig(models=["fake/task"], cache_url=url).model_dump_json()
        assert "***" in dumped and not any(s in dumped for s in url_secrets(url))
