"""One resume of a run at a time (issue 29, item 5).

Two ``--resume`` of one killed run at once could both go on (both read the run's state before
either wrote its pid): every event written twice, ``verify`` exit 1. A resume now takes an
exclusive ``flock`` on ``<run>/.lock`` before it reads the run's state and holds it to the end;
a second is refused at once, one ``error:`` line naming the holder's pid, exit 2, nothing
written, nothing paid. Synchronised by pipes and the endpoint's gate, never by sleeps.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import HANG_POLLS, make_rows, reasoner_answer, task_answer

from reflex.cli import main
from reflex.run.lock import LOCK_FILE
from reflex.testing import FakeModel
from reflex.testing.endpoint import ChatRequest, serve

CLI = str(Path(sys.executable).parent / "aevyra-reflex")
ROWS = "".join(json.dumps(r) + "\n" for r in make_rows(30))
FAKE = ("-m", "fake/task", "--reasoning-model", "fake/reasoner")
HOLD = r"""
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
print("held", flush=True)
sys.stdin.read()  # until the test closes the pipe
"""


def snapshot(run: Path) -> dict[str, bytes]:
    return {p.relative_to(run).as_posix(): p.read_bytes() for p in run.rglob("*") if p.is_file()}


def files(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text(ROWS, encoding="utf-8")
    (tmp_path / "prompt.md").write_text("Classify the sentiment.\n", encoding="utf-8")


def test_a_resume_of_a_locked_run_is_refused_at_once(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fake_model: FakeModel,
) -> None:
    """Another process holds the run (as a resume does): ``--resume`` writes and pays nothing."""
    monkeypatch.chdir(tmp_path)
    files(tmp_path)
    run_args = ["optimize", "data.jsonl", "prompt.md", *FAKE, "--max-iterations", "2"]
    with pytest.raises(SystemExit):
        main(run_args)
    (run,) = (tmp_path / ".reflex" / "runs").iterdir()
    (run / "result.json").unlink()  # killed before its end: resumable
    (run / "record.sig.json").unlink()
    capsys.readouterr()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run / LOCK_FILE)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        before, paid = snapshot(run), len(fake_model.requests)
        for resume in (["--resume"], ["--resume-from", run.name]):
            with pytest.raises(SystemExit) as exit_info:
                main([*run_args, *resume])
            err = capsys.readouterr().err.splitlines()
            assert exit_info.value.code == 2, err
            assert err == [
                f"error: run {run.name} is being resumed by another process (pid "
                f"{holder.pid}): wait for it to end, or stop it and then use --resume"
            ]
            assert snapshot(run) == before and len(fake_model.requests) == paid
    finally:
        holder.stdin.close()  # type: ignore[union-attr]
        holder.wait()
    with pytest.raises(SystemExit) as exit_info:  # the holder is gone: the lock with it
        main([*run_args, "--resume"])
    assert exit_info.value.code == 0, capsys.readouterr().err
    with pytest.raises(SystemExit) as verified:
        main(["verify", run.name])
    assert verified.value.code == 0, capsys.readouterr().out


def answer(request: ChatRequest) -> str:
    if request.model == "reasoner":
        return reasoner_answer(request)  # type: ignore[arg-type]  # same .user/.system
    return task_answer(request)  # type: ignore[arg-type]


def _until(done: object, what: str) -> None:
    for _ in range(HANG_POLLS):
        if done():  # type: ignore[operator]
            return
        time.sleep(0.01)
    pytest.fail(f"never {what}")


def test_two_real_resumes_of_one_killed_run(tmp_path: Path) -> None:
    """A killed CLI run; one ``--resume`` paying calls (held at the endpoint's gate); a second
    ``--resume-from`` and ``--resume`` are refused at once; the first finishes; verify passes."""
    files(tmp_path)
    gate = threading.Event()
    gate.set()
    counted = {"n": 0}
    held_at = 25  # past the preflight and into the baseline: the run has paid calls

    def gated(request: ChatRequest) -> str:
        counted["n"] += 1
        if counted["n"] == held_at:
            gate.clear()  # every later request waits at the gate
        return answer(request)

    env = {**os.environ, "OPENAI_API_KEY": "sk-none", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with serve(responder=gated, gate=gate) as url:
        args = [CLI, "optimize", "data.jsonl", "prompt.md", "-m", "openai/task"]
        args += ["--api-base", str(url), "--reasoning-model", "openai/reasoner"]
        args += ["--reasoning-base-url", str(url), "--max-iterations", "2", "--max-workers", "1"]

        def start(*extra: str) -> subprocess.Popen[str]:
            return subprocess.Popen(
                [*args, *extra],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )

        first = start()
        _until(lambda: url.stats().requests > held_at, "held the first run at the gate")
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate()
        (run,) = (tmp_path / ".reflex" / "runs").iterdir()
        asked = url.stats().requests
        resuming = start("--resume")
        _until(lambda: url.stats().requests > asked, "saw the resume pay a call")  # it holds run
        before, asked = snapshot(run), url.stats().requests
        for extra in (["--resume-from", run.name], ["--resume"]):
            second = subprocess.run(
                [*args, *extra], cwd=tmp_path, env=env, capture_output=True, text=True
            )
            lines = second.stderr.splitlines()
            assert second.returncode == 2, second.stderr
            assert len(lines) == 1 and lines[0].startswith("error: run "), lines
            assert f"(pid {resuming.pid})" in lines[0], lines
            if extra[0] == "--resume-from":  # straight to the lock (--resume may see the pid)
                assert "is being resumed by another process" in lines[0], lines
            assert snapshot(run) == before and url.stats().requests == asked
        gate.set()
        _, err = resuming.communicate()
        assert resuming.returncode == 0, err
    verify = subprocess.run([CLI, "verify", run.name], cwd=tmp_path, capture_output=True)
    assert verify.returncode == 0, verify.stdout
    events = [json.loads(line) for line in (run / "events.jsonl").read_text("utf-8").splitlines()]
    assert [e["type"] for e in events].count("resumed") == 1
