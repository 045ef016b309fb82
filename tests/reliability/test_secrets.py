"""Secrets: an API key reaches the provider and nothing else.

A full CLI run with both trackers, against the local OpenAI-compatible endpoint over real HTTP
(so the key really travels through LiteLLM), then every artefact is grepped for the key: the run
directory (config, splits, events, checkpoint, prompts, result, the response cache), the ``-o``
and ``--results-json`` files, the MLflow store and artifacts, the W&B offline run, stdout,
stderr and every log record at DEBUG level.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
import wandb
from conftest import make_rows
from test_faults import answer

from reflex.cli import main
from reflex.config import RunConfig
from reflex.testing.endpoint import ChatRequest, serve

KEY = "sk-test-SECRET-key-0123456789abcdef"


def every_file_mentioning(root: Path, needle: str) -> list[str]:
    data = needle.encode()
    return sorted(
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() and data in path.read_bytes()
    )


def test_no_key_lands_in_any_artefact(
    tmp_path: Path,
    template_db: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.setenv(name, str(work / name.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    shutil.copy(template_db, work / "mlflow.db")
    (work / "data.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in make_rows(20)), encoding="utf-8"
    )
    (work / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")

    seen: list[str] = []

    def recording(request: ChatRequest) -> str:
        seen.append("call")
        return answer(request)

    with serve(responder=recording) as url, caplog.at_level(logging.DEBUG):
        try:
            main(
                [
                    "optimize",
                    "data.jsonl",
                    "prompt.md",
                    "-m",
                    "openai/task",
                    "--api-base",
                    str(url),
                    "--reasoning-model",
                    "openai/reasoner",
                    "--reasoning-base-url",
                    str(url),
                    "--max-iterations",
                    "2",
                    "-o",
                    "best.md",
                    "--results-json",
                    "result.json",
                    "--mlflow-tracking-uri",
                    f"sqlite:///{work / 'mlflow.db'}",
                    "--wandb-mode",
                    "offline",
                    "-v",
                ]
            )
        except SystemExit as exc:
            assert exc.code == 0
        wandb.teardown()  # flush the offline run before grepping it
    out, err = capsys.readouterr()

    assert seen, "the endpoint was never called: the key was not exercised"
    data = json.loads((work / "result.json").read_text(encoding="utf-8"))
    assert data["completed"]
    assert (work / ".reflex" / "runs").is_dir() and (work / "mlflow.db").is_file()
    assert list((work / "wandb_dir").rglob("*.wandb")), "no W&B offline run to grep"
    assert every_file_mentioning(work, KEY) == []
    assert KEY not in out and KEY not in err
    assert not [r.getMessage() for r in caplog.records if KEY in r.getMessage()]


def test_the_config_has_no_field_for_a_key() -> None:
    # Keys come from the environment (LiteLLM reads OPENAI_API_KEY & co.), never from settings
    # that are saved with the run.
    secret_like = ("api_key", "apikey", "secret", "password", "credential")
    assert not [n for n in RunConfig.model_fields if any(word in n for word in secret_like)]
