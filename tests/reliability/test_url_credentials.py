"""Credentials inside ``--api-base`` (``user:password@``, ``?api-key=``) are never written.

config.json, events, the result, error lines and tracker params hold the redacted form; the
calls use the real URL; ``--resume`` compares redacted forms, so it keeps working.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
from pathlib import Path

import litellm
import pytest
import wandb
from canaries import URL_CASES, with_host
from conftest import make_rows
from test_faults import answer
from test_resume import START, reasoner_variants
from test_secrets import every_file_mentioning

from reflex import ConfigurationError, PromptOptimizer, ProviderError, ReflexError
from reflex.callbacks.tracking import run_params
from reflex.cli import main
from reflex.config import RunConfig
from reflex.models.retry import is_transient
from reflex.redact import is_secret_name, redact_data, redact_url, scrub
from reflex.testing import FakeModel, FakeRequest, RecordingCallback
from reflex.testing.endpoint import serve

SECRETS = ("PWSECRET", "QKEYSECRET", "RSNSECRET")
TASK_URL = "http://alice:PWSECRET@127.0.0.1:9/v1?api-version=2024-06&api-key=QKEYSECRET"
REASONER_URL = "https://r.example/v1?token=RSNSECRET"


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        ("http://u:p4ss@h:8/v1", "http://***@h:8/v1"),
        ("http://tok3n@h/v1", "http://***@h/v1"),
        ("https://h/v1?api-key=s3cr&api-version=1", "https://h/v1?api-key=***&api-version=1"),
        ("https://h/x?sig=abc%2Fdef&sv=2", "https://h/x?sig=***&sv=2"),
        ("http://localhost:8000/v1", "http://localhost:8000/v1"),
        (None, None),
    ],
)
def test_redact_url(url: str | None, redacted: str | None) -> None:
    assert redact_url(url) == redacted
    assert redact_url(redacted) == redacted  # stable: resume compares redacted forms


def test_scrub_removes_raw_and_encoded_forms() -> None:
    url = "http://bob:p%40ss@h/v1?key=a+b"
    text = "failed: http://bob:p%40ss@h/v1?key=a+b (p@ss, a b, a%20b)"
    assert not any(s in scrub(text, url) for s in ("p%40ss", "p@ss", "a b", "a%20b", "a+b"))


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("api_key", True),
        ("OPENAI_API_KEY", True),
        ("x-signature", True),
        ("sig", True),
        ("code", True),
        ("AZURE_CLIENT_SECRET", True),
        ("tokens", False),
        ("keyword", False),
        ("total_tokens", False),
        ("api_base", False),
    ],
)
def test_one_secret_name_pattern(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_scrub_hides_secret_environment_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-0123456789")
    monkeypatch.setenv("SHORT_TOKEN", "abc")  # too short to tell apart from ordinary text
    text = "401 for tok-0123456789 at http://u:pw-secret@h/v1 (abc)"
    assert scrub(text, "http://u:pw-secret@h/v1") == "401 for *** at http://u:***@h/v1 (abc)"


def test_redact_data_walks_nested_data(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-0123456789")
    data = {
        "models": ["a", {"note": "key sk-env-0123456789", "api_key": "raw", "code": 3}],
        "auth": {"user": "x"},
        "token": None,
        "url": "https://h/v1?sig=S3CRET",
        "score": 0.5,
    }
    assert redact_data(data, "https://h/v1?sig=S3CRET") == {
        "models": ["a", {"note": "key ***", "api_key": "***", "code": 3}],
        "auth": "***",
        "token": None,
        "url": "https://h/v1?sig=***",
        "score": 0.5,
    }
    assert data["auth"] == {"user": "x"}  # a copy: the caller's data is untouched


def test_config_serialises_redacted_but_calls_use_the_real_url() -> None:
    config = RunConfig(models=["openai/m"], api_base=TASK_URL, reasoning_base_url=REASONER_URL)
    assert config.api_base == TASK_URL  # what the provider gets
    dumped = json.dumps(config.model_dump(mode="json")) + repr(config) + str(config)
    assert not [s for s in SECRETS if s in dumped]
    assert not [s for s in SECRETS if s in json.dumps(run_params(config))]


def builder(run_dir: Path, task_url: str = TASK_URL) -> PromptOptimizer:
    return (
        PromptOptimizer()
        .set_dataset(make_rows(40))
        .add_provider("fake/task", api_base=task_url)
        .add_metric("exact_match")
        .set_strategy("instructions")
        .set_reasoning_model("fake/reasoner", base_url=REASONER_URL)
        .set_run_dir(run_dir)
        .configure(max_iterations=3, early_stopping_patience=None)
    )


def test_run_and_resume_with_credentials_in_the_url(tmp_path: Path) -> None:
    def fault(request: FakeRequest, n: int) -> BaseException | None:
        if n == 40:  # a permanent failure mid-run: the run is kept and resumable
            return litellm.BadRequestError("bad request", model="task", llm_provider="openai")
        return None

    FakeModel(reasoner_variants, fault=fault).install()
    recorder = RecordingCallback()
    with pytest.raises(ProviderError):
        builder(tmp_path).run(START, callbacks=[recorder])
    with pytest.raises(ConfigurationError, match=r"api_base: .*\*\*\*@127\.0\.0\.1") as refused:
        builder(tmp_path, "http://alice:PWSECRET@127.0.0.2:9/v1").run(START, resume=True)
    assert "PWSECRET" not in str(refused.value)
    FakeModel(reasoner_variants).install()
    result = builder(tmp_path).run(START, callbacks=[recorder], resume=True)
    assert result.completed
    [config] = [args[0] for hook, args in recorder.calls if hook == "on_run_start"][:1]
    (tmp_path / "callback.json").write_text(
        json.dumps(config.model_dump(mode="json")) + repr(config), encoding="utf-8"
    )
    (tmp_path / "result.json").write_text(json.dumps(result.to_dict()), encoding="utf-8")
    assert [s for s in SECRETS if every_file_mentioning(tmp_path, s)] == []


@pytest.mark.parametrize("suffix", ["userinfo", "query"])
def test_errors_that_echo_the_url_are_scrubbed(
    suffix: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-url-0123456789")
    (tmp_path / "d.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in make_rows(20)), encoding="utf-8"
    )
    (tmp_path / "p.md").write_text(START + "\n", encoding="utf-8")
    with serve(responder=answer) as url:
        api = (
            str(url).replace("http://", "http://alice:PWSECRET@")
            if suffix == "userinfo"
            else f"{url}?api-key=QKEYSECRET"
        )
        with pytest.raises(SystemExit) as done:
            main(
                [
                    "optimize",
                    "d.jsonl",
                    "p.md",
                    "-m",
                    "openai/task",
                    "-s",
                    "fewshot",
                    "--api-base",
                    api,
                ]
            )
    err = capsys.readouterr().err
    assert done.value.code == 2 and "error:" in err
    assert not [s for s in SECRETS if s in err or every_file_mentioning(tmp_path, s)]
    if suffix == "userinfo":  # aiohttp refuses URL credentials: permanent, keys go in the env
        assert "API key in the environment" in err


def test_url_credentials_refusal_is_permanent() -> None:
    exc = litellm.InternalServerError(
        "Cannot combine AUTHORIZATION header with AUTH argument or credentials encoded in URL",
        model="m",
        llm_provider="openai",
    )
    assert not is_transient(exc)


def test_log_records_are_scrubbed_of_url_credentials() -> None:
    """With -v, LiteLLM's own DEBUG lines may echo the --api-base URL: the CLI's filter hides it."""
    import logging

    from reflex.redact import ScrubFilter

    url = "http://alice:s3cret-pass@127.0.0.1:9/v1?api-key=k3y-value-123"
    record = logging.LogRecord("LiteLLM", logging.DEBUG, __file__, 1, "POST %s", (url,), None)
    assert ScrubFilter(url).filter(record)
    assert "s3cret-pass" not in record.getMessage() and "k3y-value-123" not in record.getMessage()
    assert "127.0.0.1:9" in record.getMessage()


@pytest.mark.parametrize("case", sorted(URL_CASES))
def test_no_url_credential_in_any_log_line_of_a_cli_run(
    case: str,
    tmp_path: Path,
    template_db: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A CLI run with both trackers and -v: stdout, stderr (LiteLLM's own DEBUG handler, the
    traceback), every log record, the run directory, the MLflow store and W&B's offline files
    (its debug logs, the command line it records) hold no credential of --api-base."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-url-0123456789")
    for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    shutil.copy(template_db, tmp_path / "mlflow.db")
    (tmp_path / "d.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in make_rows(20)), encoding="utf-8"
    )
    (tmp_path / "p.md").write_text(START + "\n", encoding="utf-8")
    url, _, canaries = URL_CASES[case]
    with serve(responder=answer) as base, caplog.at_level(logging.DEBUG):
        args = ["optimize", "d.jsonl", "p.md", "-m", "openai/task", "-s", "fewshot", "-v"]
        args += ["--api-base", with_host(url, str(base)), "--wandb-mode", "offline"]
        args += ["--mlflow-tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"]
        monkeypatch.setattr(sys, "argv", ["aevyra-reflex", *args])  # W&B records the command
        monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # the CLI replaces it
        with pytest.raises(ReflexError) as raised:  # -v: the error propagates
            main(args)
        sys.excepthook(raised.type, raised.value, raised.tb)  # the traceback -v prints at exit
        wandb.teardown()  # flush the offline run before grepping it
    out, err = capsys.readouterr()
    assert list(tmp_path.rglob("*.wandb")) and list((tmp_path / ".reflex").rglob("events.jsonl"))
    assert "target_source" in (tmp_path / "mlflow.db").read_bytes().decode("latin-1")
    assert [c for c in canaries if c in out + err + caplog.text] == []
    in_files = {c: every_file_mentioning(tmp_path, c) for c in canaries}
    assert {c: files for c, files in in_files.items() if files} == {}
