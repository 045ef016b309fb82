"""User code that exits, and input paths that are not regular files, never hang a run.

A pipeline whose ``run()`` calls ``sys.exit()`` used to hang the run forever (only ``Exception``
was caught; a SystemExit on the event loop stops the loop). A prompt path that is a FIFO blocked
forever on open; a FIFO, ``/dev/null`` or a symlink loop as dataset said "file not found".
Now the pipeline's exit fails its row like any exception, and special files are one error line
that says what the path is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows
from test_pipeline import evaluate, examples, pipeline_responder

from reflex.cli import main
from reflex.data.pipeline import Prompt
from reflex.result import EvalSnapshot
from reflex.testing import FakeModel

ROWS = "".join(json.dumps(r) + "\n" for r in make_rows(30))
MODELS = ("-m", "fake/task", "--reasoning-model", "fake/reasoner")
FIFO_ARGS = ("data.jsonl", "fifo", *MODELS)


def exits_sync(prompt: Prompt, input: str, call: Callable[..., str]) -> str:
    sys.exit(3)


async def exits_async(prompt: Prompt, input: str, call: Any) -> str:
    sys.exit(4)


def bounded(fn: Callable[[], EvalSnapshot]) -> EvalSnapshot:
    """``fn()`` on a thread; a hang fails the test after 120 s instead of blocking it."""
    box: list[EvalSnapshot] = []
    worker = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    worker.start()
    worker.join(120)
    assert box, "the evaluation hung"
    return box[0]


@pytest.mark.parametrize(("fn", "code"), [(exits_sync, 3), (exits_async, 4)])
def test_a_pipeline_that_calls_sys_exit_fails_its_rows_not_the_run(
    fn: Callable[..., Any], code: int
) -> None:
    FakeModel(pipeline_responder).install()
    snap = bounded(lambda: evaluate(fn, examples(3), timeout=30))
    assert len(snap.samples) == 3
    for sample in snap.samples:
        assert sample.score == 0.0 and f"run() raised SystemExit({code})" in str(sample.error)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.jsonl").write_text(ROWS, encoding="utf-8")
    (tmp_path / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    os.mkfifo(tmp_path / "fifo")
    os.symlink(tmp_path / "loop_a", tmp_path / "loop_b")
    os.symlink(tmp_path / "loop_b", tmp_path / "loop_a")
    return tmp_path


@pytest.mark.parametrize(
    ("dataset", "expect"),
    [
        ("fifo", "is a named pipe (FIFO), not a regular file"),
        ("/dev/null", "is a character device (like /dev/null)"),
        ("loop_a", "is a symbolic link loop"),
    ],
)
def test_a_dataset_that_is_not_a_regular_file_says_what_it_is(
    dataset: str,
    expect: str,
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
    fake_model: FakeModel,
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["optimize", dataset, "prompt.md", *MODELS])
    (line,) = capsys.readouterr().err.splitlines()
    assert exit_info.value.code == 2 and dataset in line and expect in line, line
    assert "not found" not in line and fake_model.requests == []


def test_a_prompt_symlink_loop_says_so(
    workdir: Path, capsys: pytest.CaptureFixture[str], fake_model: FakeModel
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["optimize", "data.jsonl", "loop_a", *MODELS])
    (line,) = capsys.readouterr().err.splitlines()
    assert exit_info.value.code == 2 and "loop_a: prompt file is a symbolic link loop" in line
    assert "writable" not in line, line


def test_a_fifo_prompt_is_refused_instead_of_blocking(workdir: Path) -> None:
    # A real process: on the old code it blocked forever in open(); the timeout bounds that.
    done = subprocess.run(
        [sys.executable, "-c", "from reflex.cli import main; main()", "optimize", *FIFO_ARGS],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
    )
    (line,) = done.stderr.splitlines()
    assert done.returncode == 2 and "fifo: prompt file is a named pipe (FIFO)" in line, line
