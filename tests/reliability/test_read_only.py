"""Commands that only read a run write nothing into the run directory (issue 20, item 9).

``export`` failed on a read-only run directory although it only reads: it opened the response
cache for writing (sqlite, WAL journal). Two checks, for ``export``, ``show``, ``verify``,
``runs`` and ``report``:

* a read-only bind mount of a finished run directory (the tests run as root, so ``chmod`` stops
  no write): each command works on it. Skipped, with the reason, where mounting is not allowed;
* a portable one: a ``sys.addaudithook`` hook raises PermissionError for every open for writing
  (a mode with w/a/x/+, os.open flags with O_WRONLY/O_RDWR/O_CREAT/O_APPEND/O_TRUNC), every
  sqlite connection that is not read-only, and every remove/rename/mkdir under the run
  directory while the commands run in one process (a child process, so the hook, which cannot
  be removed, does not stay in the test process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import make_rows, responder

from reflex.cli import build_cli, main
from reflex.testing import FakeModel

MODELS = ("-m", "fake/task", "--reasoning-model", "fake/reasoner")

HOOK = r"""
import json, os, sys
from urllib.parse import urlsplit, parse_qs
RUN_DIR = os.path.abspath(sys.argv[1])
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
CHANGES = {"os.remove", "os.rename", "os.mkdir", "os.rmdir", "os.truncate", "os.chmod",
           "os.utime", "os.symlink", "os.link", "shutil.rmtree", "shutil.move", "os.replace"}
state = {"on": False, "inside": False, "refused": []}

def under(path):
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, (str, os.PathLike)):
        return False
    full = os.path.abspath(os.fspath(path))
    return full == RUN_DIR or full.startswith(RUN_DIR + os.sep)

def refuse(what):
    state["refused"].append(what)
    raise PermissionError(f"read-only check: {what}")

def hook(event, args):
    if not state["on"] or state["inside"]:
        return
    state["inside"] = True
    try:
        if event == "open":
            path, mode, flags = args
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & WRITE_FLAGS)
            if writes and under(path):
                refuse(f"open {path} {mode!r} {flags}")
        elif event == "sqlite3.connect":
            database = os.fsdecode(args[0]) if isinstance(args[0], bytes) else os.fspath(args[0])
            if database.startswith("file:"):
                parts = urlsplit(database)
                if under(parts.path) and parse_qs(parts.query).get("mode") != ["ro"]:
                    refuse(f"sqlite {database}")
            elif under(database):
                refuse(f"sqlite {database}")
        elif event in CHANGES and any(under(a) for a in args[:2]):
            refuse(f"{event} {args[:2]}")
    finally:
        state["inside"] = False

sys.addaudithook(hook)
from reflex.testing import FakeModel
FakeModel().install()
from reflex.cli import main
state["on"] = True
try:  # the hook works: a write under the run directory is refused
    open(os.path.join(RUN_DIR, "probe"), "w")
    probe = "written"
except PermissionError:
    probe = "refused"
state["refused"].clear()
codes = {}
for argv in json.loads(sys.argv[2]):
    try:
        main(argv)
        codes[argv[0]] = 0
    except SystemExit as exc:
        codes[argv[0]] = exc.code
state["on"] = False
print(json.dumps({"probe": probe, "codes": codes, "refused": state["refused"]}))
"""


@pytest.fixture
def finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A finished run: (its run directory, its id), the dataset at tmp_path/data.jsonl."""
    FakeModel(responder).install()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in make_rows(30)), encoding="utf-8"
    )
    (tmp_path / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")
    with pytest.raises(SystemExit) as done:
        main(["optimize", "data.jsonl", "prompt.md", *MODELS, "--max-iterations", "1"])
    assert done.value.code in (None, 0)
    [run] = (tmp_path / ".reflex" / "runs").iterdir()
    return tmp_path / ".reflex", run.name


def _commands(run_dir: Path, run_id: str, out: Path) -> list[list[str]]:
    where = ["--run-dir", str(run_dir)]
    return [
        [
            "export",
            run_id,
            "--training-jsonl",
            str(out / "train.jsonl"),
            "--min-score",
            "0",
            "--split",  # the test rows: the final evaluated them all with the best prompt
            "test",
            "--allow-held-out",
            *where,
        ],
        ["show", run_id, *where],
        ["verify", run_id, *where],
        ["runs", *where],
        ["report", run_id, "-o", str(out / "report.html"), *where],
    ]


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


def test_read_only_commands_open_nothing_for_writing_in_the_run_directory(
    finished: tuple[Path, str], tmp_path: Path
) -> None:
    run_dir, run_id = finished
    out = tmp_path / "out"
    out.mkdir()
    before = _snapshot(run_dir)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [sys.executable, "-c", HOOK, str(run_dir), json.dumps(_commands(run_dir, run_id, out))],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["probe"] == "refused"  # the hook does refuse writes there
    assert report["refused"] == [], report["refused"]
    assert report["codes"] == {"export": 0, "show": 0, "verify": 0, "runs": 0, "report": 0}, (
        report,
        done.stderr,
    )
    assert (out / "train.jsonl").read_text(encoding="utf-8").strip()  # it did export rows
    assert _snapshot(run_dir) == before  # not a byte, not a new file, not a touched one


@pytest.fixture
def read_only_mount(finished: tuple[Path, str], tmp_path: Path) -> Iterator[Path]:
    """The finished run directory, bind-mounted read-only at tmp_path/ro."""
    run_dir, _ = finished
    target = tmp_path / "ro"
    target.mkdir()
    bind = subprocess.run(
        ["mount", "--bind", str(run_dir), str(target)], capture_output=True, text=True
    )
    if bind.returncode != 0:
        pytest.skip(f"a bind mount is not permitted here: {bind.stderr.strip()}")
    try:
        ro = subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(target)], capture_output=True, text=True
        )
        if ro.returncode != 0:
            pytest.skip(f"a read-only remount is not permitted here: {ro.stderr.strip()}")
        probe = target / "probe"
        with pytest.raises(OSError):  # really read-only, even for root
            probe.write_text("x")
        yield target
    finally:
        subprocess.run(["umount", str(target)], capture_output=True)


def test_read_only_commands_work_on_a_read_only_mount(
    finished: tuple[Path, str], read_only_mount: Path, tmp_path: Path
) -> None:
    _, run_id = finished
    out = tmp_path / "out"
    out.mkdir()
    for argv in _commands(read_only_mount, run_id, out):
        result = CliRunner().invoke(build_cli(), argv, catch_exceptions=False)
        assert result.exit_code == 0, (argv[0], result.output)
    assert (out / "train.jsonl").read_text(encoding="utf-8").strip()
