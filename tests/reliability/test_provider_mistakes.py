"""Provider mistakes fail fast and quietly, and never leave a run that ``--resume`` picks up.

A missing API key or a misspelt provider used to surface from the baseline's first calls, after
a run directory was created, as ``InternalServerError`` (a missing OpenAI key) with asyncio
``RuntimeWarning: coroutine ... was never awaited`` lines on stderr; a later ``--resume`` with
other settings then picked that failed run and refused to continue it. Now both are one error
line before any call (no run directory), and ``--resume`` only picks a run this command can
continue ("no unfinished run matches; the closest differs in ...").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import litellm
import pytest
from conftest import make_rows

from reflex.cli import main
from reflex.testing import FakeModel, FakeRequest
from reflex.testing.endpoint import serve

CHECK = ("check", "--prompt", "prompt.md", "--dataset", "data.jsonl", "--baseline", "0.5")
ROWS = "".join(json.dumps(r) + "\n" for r in make_rows(30))


def _inputs(root: Path) -> None:
    (root / "data.jsonl").write_text(ROWS, encoding="utf-8")
    (root / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")


def test_a_missing_key_is_one_line_before_any_call_with_no_warnings(tmp_path: Path) -> None:
    # A real process: asyncio's warnings go to its stderr. The endpoint stands in for the
    # provider, so a request that got out would be counted (and nothing leaves the machine).
    _inputs(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    with serve() as url:
        args = ["optimize", "data.jsonl", "prompt.md", "-m", "openai/gpt-4o-mini"]
        args += ["--api-base", url, "--reasoning-model", "openai/gpt-4o-mini"]
        args += ["--reasoning-base-url", url, "--max-iterations", "1"]
        done = subprocess.run(
            [sys.executable, "-c", "from reflex.cli import main; main()", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        requests = url.stats().requests
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "AuthenticationError" in lines[0] and "set OPENAI_API_KEY" in lines[0], lines[0]
    assert "RuntimeWarning" not in done.stderr and "Traceback" not in done.stderr
    assert requests == 0
    assert not (tmp_path / ".reflex" / "runs").exists()  # nothing for --resume to pick up


@pytest.mark.parametrize(
    ("model", "expect"),
    [
        ("opnai/gpt-4o-mini", "did you mean openai/gpt-4o-mini?"),
        ("antropic/claude-3-5-haiku", "did you mean anthropic/claude-3-5-haiku?"),
        ("nosuchprovider/m", "unknown provider 'nosuchprovider'"),
    ],
)
def test_a_misspelt_provider_is_one_line_before_any_call(
    model: str,
    expect: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fake_model: FakeModel,
) -> None:
    monkeypatch.chdir(tmp_path)
    _inputs(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(["optimize", "data.jsonl", "prompt.md", "-m", model, "--reasoning-model", "fake/r"])
    (line,) = capsys.readouterr().err.splitlines()
    assert exit_info.value.code == 2 and "unknown provider" in line and expect in line, line
    assert fake_model.requests == []
    assert not (tmp_path / ".reflex" / "runs").exists()


def test_a_key_given_another_way_is_not_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from reflex.models.preflight import check_models
    from reflex.models.spec import ModelSpec

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    check_models([ModelSpec("openai/m", extra={"api_key": "sk-x"})])  # api_key= in Python
    check_models([ModelSpec("bedrock/anthropic.claude-v2")])  # profiles: not checked
    monkeypatch.setenv("OPENAI_API_KEY", "sk-y")
    check_models([ModelSpec("openai/m")])


def _failing_then(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """A run whose first call fails (a revoked key); returns its id."""

    def revoked(request: FakeRequest, number: int) -> BaseException | None:
        if request.model == "fake/broken":
            return litellm.AuthenticationError(
                message="Incorrect API key provided", llm_provider="openai", model="broken"
            )
        return None

    FakeModel(fault=revoked).install()
    _inputs(tmp_path)
    with pytest.raises(SystemExit):
        main(
            [
                "optimize",
                "data.jsonl",
                "prompt.md",
                "-m",
                "fake/broken",
                "--reasoning-model",
                "fake/r",
            ]
        )
    capsys.readouterr()
    (run,) = (tmp_path / ".reflex" / "runs").iterdir()
    return run.name


def test_resume_never_picks_a_failed_run_made_with_other_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    failed = _failing_then(tmp_path, capsys)
    args = ["optimize", "data.jsonl", "prompt.md", "-m", "fake/task", "--reasoning-model"]
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "fake/r", "--resume"])
    (line,) = capsys.readouterr().err.splitlines()
    assert exit_info.value.code == 2
    assert "no unfinished run in .reflex matches this command" in line, line
    assert f"the closest, {failed}, differs in models: ['fake/broken'] -> ['fake/task']" in line


def test_resume_says_when_the_matching_run_is_still_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    failed = _failing_then(tmp_path, capsys)
    run = tmp_path / ".reflex" / "runs" / failed
    (run / "result.json").unlink()  # no result yet, and its process (our parent) is alive
    meta = json.loads((run / "run.json").read_text(encoding="utf-8"))
    (run / "run.json").write_text(json.dumps({**meta, "pid": os.getppid()}), encoding="utf-8")
    with pytest.raises(SystemExit):
        main(
            [
                "optimize",
                "data.jsonl",
                "prompt.md",
                "-m",
                "fake/broken",
                "--reasoning-model",
                "fake/r",
                "--resume",
            ]
        )
    (line,) = capsys.readouterr().err.splitlines()
    assert f"run {failed} is still running (pid {os.getppid()})" in line, line


def test_check_refuses_a_missing_key_before_any_call(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    _inputs(tmp_path)
    with serve() as url, pytest.raises(SystemExit) as exit_info:
        main([*CHECK, "-m", "anthropic/claude-3-5-haiku", "--api-base", url])
    (line,) = capsys.readouterr().err.splitlines()
    assert exit_info.value.code == 2 and "set ANTHROPIC_API_KEY" in line, line
