"""A closed stdout ends a command quietly (issue 29, item 14b).

``aevyra-reflex show RUN | head -1`` said "cannot write ?: Broken pipe; make the directory
writable or pass --run-dir" and exited 2: the EPIPE of a write to a pipe whose reader had gone
was taken for a storage problem. Now every command (and ``--help``) stops without a word and
exits 141 (128 + SIGPIPE, what a shell reports for ``seq`` in ``seq 100000 | head -1``), and
Python's "Exception ignored ... BrokenPipeError" at shutdown is not printed either.

Each case runs the real CLI in a subprocess whose stdout is a pipe with its read end already
closed, so the first write fails (deterministically, unlike racing a ``head -1``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_rows

from reflex import PromptOptimizer
from reflex.cli.pipes import EXIT_BROKEN_PIPE
from reflex.testing import FakeModel

CLI = "import sys; from reflex.cli import main; sys.argv[0] = 'aevyra-reflex'; main()"


def run_closed(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``aevyra-reflex ARGS`` with stdout a pipe nobody reads; its status and stderr."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", CLI, *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        os.close(write_end)
    return done.returncode, done.stderr


@pytest.fixture
def run_id(tmp_path: Path, fake_model: FakeModel) -> str:
    result = (
        PromptOptimizer()
        .set_dataset(make_rows(20))
        .add_provider("fake/task")
        .add_metric("exact_match")
        .set_reasoning_model("fake/reasoner")
        .configure(max_iterations=1, run_dir=str(tmp_path / ".reflex"))
        .run("Classify the sentiment.")
    )
    assert result.run_dir is not None
    return Path(result.run_dir).name


@pytest.mark.parametrize(
    "args",
    [
        ["show", "RUN"],
        ["show", "RUN", "--json"],
        ["runs"],
        ["verify", "RUN"],
        ["plugins"],
        ["--help"],
        ["show", "--help"],
    ],
    ids=["show", "show-json", "runs", "verify", "plugins", "help", "show-help"],
)
def test_a_closed_stdout_ends_the_command_quietly(
    args: list[str], run_id: str, tmp_path: Path
) -> None:
    code, err = run_closed([run_id if arg == "RUN" else arg for arg in args], tmp_path)
    assert "error:" not in err and "Traceback" not in err and "Exception ignored" not in err, err
    assert err == "" and code == EXIT_BROKEN_PIPE, (code, err)


def test_a_real_error_still_says_error_when_stdout_is_closed(tmp_path: Path) -> None:
    """The quiet exit is for the closed pipe only: a bad run id is still one error line."""
    code, err = run_closed(["show", "no-such-run"], tmp_path)
    assert code == 2 and err.startswith("error: no run matching 'no-such-run'"), (code, err)
