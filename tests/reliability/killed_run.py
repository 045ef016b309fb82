"""A finished run made to look killed before its end: the fixture the resume tests share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_rows

from reflex.cli import main

ROWS = "".join(json.dumps(r) + "\n" for r in make_rows(30))
MODELS = ("-m", "fake/task", "--reasoning-model", "fake/reasoner")
RUN = ["optimize", "data.jsonl", "prompt.md", *MODELS, "--max-iterations", "2"]


def interrupted_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Path:
    """A finished run made to look killed before its end (no result.json, no seal).

    Call it from a fixture that also takes ``fake_model`` (the run's task and reasoning model).
    """
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.jsonl").write_text(ROWS, encoding="utf-8")
    (tmp_path / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        main(RUN)
    capsys.readouterr()
    (run,) = (tmp_path / ".reflex" / "runs").iterdir()
    (run / "result.json").unlink()
    (run / "record.sig.json").unlink()
    return run
