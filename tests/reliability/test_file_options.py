"""Every file-taking option refuses a FIFO, a device or a socket with one line (issue 20).

``--judge-criteria`` (``click.Path(exists=True)``) accepted a FIFO and blocked forever reading
it; ``--router-config`` did the same, ``--pipeline-file`` called a FIFO "not found", and
``-o /dev/null`` (as root) or ``-o FIFO`` had the atomic write replace the special file with a
regular one after the whole paid run. Each option now gives the dataset and prompt readers' own
line (``reflex.data.files.file_problem``) when the command line is parsed, before any call.

Each case is a real process with a timeout: on the old code several of them block forever.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import make_rows

from reflex.data.files import atomic_write_text, file_problem, output_problem
from reflex.errors import ConfigurationError, StorageError

FIFO_LINE = "is a named pipe (FIFO), not a regular file"
DEVICE_LINE = "is a character device (like /dev/null), not a regular file"
# No reasoning model: a command that got past its file options would stop at once with "needs a
# reasoning model", before any call and any write. Keep it so: on code without these checks, a
# complete run would end by replacing the output path, and as root that could be /dev/null.
MODEL = ("-m", "fake/task")
# Runs the CLI with the fake provider installed, and reports how many model calls were made.
SCRIPT = (
    "import sys\n"
    "from reflex.testing import FakeModel\n"
    "fake = FakeModel().install()\n"
    "from reflex.cli import main\n"
    "try:\n"
    "    main(sys.argv[1:])\n"
    "finally:\n"
    "    print(f'calls={len(fake.requests)}')\n"
)

CASES: dict[str, tuple[str, ...]] = {
    "optimize DATASET": ("optimize", "SPECIAL", "prompt.md", *MODEL),
    "optimize PROMPT": ("optimize", "data.jsonl", "SPECIAL", *MODEL),
    "optimize --inputs-file": ("optimize", "prompt.md", "--inputs-file", "SPECIAL", *MODEL),
    "optimize --pipeline-file": (
        "optimize",
        "data.jsonl",
        "prompt.md",
        "--pipeline-file",
        "SPECIAL",
        *MODEL,
    ),
    "optimize --judge-criteria": (
        "optimize",
        "data.jsonl",
        "prompt.md",
        *MODEL,
        "--judge",
        "fake/judge",
        "--judge-criteria",
        "SPECIAL",
    ),
    "optimize --reasoning-template": (
        "optimize",
        "data.jsonl",
        "prompt.md",
        *MODEL,
        "--reasoning-model",
        "fake/reasoner",
        "--reasoning-template",
        "iterative.system=SPECIAL",
    ),
    "optimize --router-config": (
        "optimize",
        "data.jsonl",
        "prompt.md",
        *MODEL,
        "--router-config",
        "SPECIAL",
    ),
    "optimize -o": ("optimize", "data.jsonl", "prompt.md", *MODEL, "-o", "SPECIAL"),
    "optimize --cache-url": (
        "optimize",
        "data.jsonl",
        "prompt.md",
        *MODEL,
        "--cache-url",
        "sqlite:///SPECIAL",
    ),
    "optimize --results-json": (
        "optimize",
        "data.jsonl",
        "prompt.md",
        *MODEL,
        "--results-json",
        "SPECIAL",
    ),
    "compare --judge-criteria": (
        "compare",
        "data.jsonl",
        "prompt.md",
        *MODEL,
        "--strategies",
        "fewshot",
        "--judge",
        "fake/judge",
        "--judge-criteria",
        "SPECIAL",
    ),
    "check --prompt": (
        "check",
        "--prompt",
        "SPECIAL",
        "--dataset",
        "data.jsonl",
        "--baseline",
        "0.5",
        *MODEL,
    ),
    "check --dataset": (
        "check",
        "--prompt",
        "prompt.md",
        "--dataset",
        "SPECIAL",
        "--baseline",
        "0.5",
        *MODEL,
    ),
    "check --judge-criteria": (
        "check",
        "--prompt",
        "prompt.md",
        "--dataset",
        "data.jsonl",
        "--baseline",
        "0.5",
        *MODEL,
        "--judge",
        "fake/judge",
        "--judge-criteria",
        "SPECIAL",
    ),
    "check --cache": (
        "check",
        "--prompt",
        "prompt.md",
        "--dataset",
        "data.jsonl",
        "--baseline",
        "0.5",
        *MODEL,
        "--cache",
        "SPECIAL",
    ),
    "export --dataset": (
        "export",
        "some-run",
        "--training-jsonl",
        "out.jsonl",
        "--dataset",
        "SPECIAL",
    ),
    "export --training-jsonl": ("export", "some-run", "--training-jsonl", "SPECIAL"),
    "report -o": ("report", "some-run", "-o", "SPECIAL"),
    "judge-check DATASET": (
        "judge-check",
        "SPECIAL",
        "--judge",
        "fake/judge",
        "--label-field",
        "ok",
    ),
    "judge-check --judge-criteria": (
        "judge-check",
        "data.jsonl",
        "--judge",
        "fake/judge",
        "--label-field",
        "ok",
        "--judge-criteria",
        "SPECIAL",
    ),
}


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "data.jsonl").write_text(
        "".join(json.dumps({**r, "ok": "pass"}) + "\n" for r in make_rows(30)), encoding="utf-8"
    )
    (tmp_path / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    os.mkfifo(tmp_path / "fifo")
    return tmp_path


def _cli(workdir: Path, argv: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, *argv],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard: the old code blocked forever on several of these
        env=env,
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_fifo_given_to_any_file_option_is_one_line_before_any_call(
    case: str, workdir: Path
) -> None:
    argv = tuple(a.replace("SPECIAL", "fifo") for a in CASES[case])
    done = _cli(workdir, argv)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, (case, done.stderr)
    assert len(lines) == 1 and "fifo" in lines[0] and FIFO_LINE in lines[0], (case, lines)
    assert "calls=0" in done.stdout  # nothing was called
    assert stat.S_ISFIFO((workdir / "fifo").stat().st_mode)  # and the FIFO is still one


@pytest.mark.parametrize(
    "case",
    ["optimize --judge-criteria", "optimize -o", "optimize --cache-url", "export --training-jsonl"],
)
def test_dev_null_is_a_device_not_an_empty_file_or_a_place_to_write(
    case: str, workdir: Path
) -> None:
    argv = tuple(a.replace("SPECIAL", "/dev/null") for a in CASES[case])
    done = _cli(workdir, argv)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and DEVICE_LINE in lines[0], (case, lines)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def _refused(call: Callable[[], object]) -> BaseException:
    """What ``call()`` raised, run on a thread: a blocked read fails the test after 60 s (the
    thread stays blocked on the FIFO) instead of hanging it."""
    box: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)
    assert box, "it blocked on the FIFO, or accepted it"
    return box[0]


def test_the_library_refuses_them_too(workdir: Path) -> None:
    """The Python API reads the same files: the same line, never a blocked read."""
    from reflex import PromptOptimizer
    from reflex.data.pipeline import load_pipeline
    from reflex.judging.judge import load_rubric

    fifo = workdir / "fifo"
    cases: list[tuple[Callable[[], object], type[BaseException], str]] = [
        (lambda: load_rubric(fifo), ConfigurationError, f"fifo: judge criteria file {FIFO_LINE}"),
        (lambda: load_pipeline(fifo), ConfigurationError, f"pipeline file {FIFO_LINE}"),
        (lambda: PromptOptimizer().set_router(fifo), ConfigurationError, "router config is a"),
        (
            lambda: PromptOptimizer().set_reasoning_template("iterative.system", fifo),
            ConfigurationError,
            f"reasoning template file {FIFO_LINE}",
        ),
        (lambda: atomic_write_text(fifo, "x"), StorageError, f"output file {FIFO_LINE}"),
    ]
    for call, kind, line in cases:
        error = _refused(call)
        assert isinstance(error, kind) and line in str(error), repr(error)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    # One table of lines: what a reader and a writer say about a FIFO is the same text.
    assert (file_problem(fifo, "x") or "").removeprefix("x ") == (
        output_problem(fifo, "x") or ""
    ).removeprefix("x ")
    assert output_problem(workdir / "new.json") is None
    assert output_problem(workdir / "prompt.md") is None
