"""Ctrl-C: the first one finishes cleanly and resumably, a second one exits at once.

The signal is real: SIGINT is sent from inside a model call (on the event-loop or endpoint
thread) to the main thread, which is waiting on the event loop, as a terminal's Ctrl-C would
be. It is aimed at the main thread (``pthread_kill``) because a process-directed signal may be
taken by any thread, and then the main thread's wait is not interrupted until it returns.
Nothing here waits for a time to pass: each interrupt fires at a given call number.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows, reflex_tasks
from test_faults import answer
from test_resume import START, cached_rows, comparable, reasoner_variants

from reflex import OptimizationResult, PromptOptimizer
from reflex.models.client import load_litellm
from reflex.models.runner import LoopRunner
from reflex.run.resume import list_runs
from reflex.testing import FakeModel, FakeRequest, RecordingCallback
from reflex.testing.endpoint import ChatRequest, serve

ARGS = ["-m", "fake/task", "-s", "instructions", "--max-iterations", "4", "--max-workers", "4"]


def ctrl_c() -> None:
    """SIGINT to the main thread, from whichever thread calls this."""
    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt in this process, as it does in a terminal.

    pytest started in the background (``cmd &`` without job control, nohup, some CI agents)
    inherits SIGINT ignored, and Python keeps it ignored: the interrupt was lost and the run
    finished ("DID NOT RAISE KeyboardInterrupt"). The CLI tests need no fixture: ``main``
    installs its own handler.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def cli_args(tmp_path: Path) -> list[str]:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_rows(40)), encoding="utf-8")
    prompt = tmp_path / "p.md"
    prompt.write_text(START + "\n", encoding="utf-8")
    return ["optimize", str(data), str(prompt), *ARGS, "--run-dir", str(tmp_path / "runs")]


def run_interrupted(args: list[str], at_call: int, *, slow_cleanup: Path | None = None) -> int:
    """The CLI in a forked child that gets SIGINT at model call ``at_call``; its exit code.

    ``slow_cleanup``: the run's error handling then hangs (a tracker that does not answer)
    after sending itself a second SIGINT, which must end the process at once; if the hang
    ever returns, it writes that file.
    """
    load_litellm()  # import once in the parent; the child inherits it
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            if slow_cleanup:
                from reflex.cli.console import ConsoleReporter

                def hang(self: Any, error: BaseException, partial: Any) -> None:
                    ctrl_c()
                    time.sleep(60)  # only ends early if the second Ctrl-C did not exit
                    slow_cleanup.write_text("the cleanup ran to its end", encoding="utf-8")

                ConsoleReporter.on_run_error = hang  # type: ignore[method-assign]

            def fault(request: FakeRequest, n: int) -> BaseException | None:
                if n == at_call:
                    ctrl_c()
                return None

            FakeModel(reasoner_variants, fault=fault).install()
            from reflex.cli import main

            main(args)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status), f"child ended by signal {os.WTERMSIG(status)}"
    return os.WEXITSTATUS(status)


def test_first_ctrl_c_saves_and_resume_finishes(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from reflex.cli import main

    args = cli_args(tmp_path)
    reference = FakeModel(reasoner_variants).install()
    ref_args = [*args, "--run-dir", str(tmp_path / "ref"), "--results-json", str(tmp_path / "e")]
    with pytest.raises(SystemExit):
        main(ref_args)
    expected = OptimizationResult.from_dict(json.loads((tmp_path / "e").read_text()))
    total = len(reference.requests)
    capfd.readouterr()

    assert total > 45
    assert run_interrupted(args, at_call=45) == 130
    err = capfd.readouterr().err.strip().splitlines()
    assert "--resume" in err[-1] and "Traceback" not in "\n".join(err)
    [run] = list_runs(tmp_path / "runs")
    assert run.status == "interrupted"
    assert run.result is not None and not run.result["completed"]
    assert "KeyboardInterrupt" in run.result["stop_reason"]
    assert (run.path / "checkpoint.json").is_file()
    kinds = [json.loads(x)["type"] for x in (run.path / "events.jsonl").read_text().splitlines()]
    assert kinds[-1] == "run_error"

    paid_before = cached_rows(tmp_path / "runs")
    fake = FakeModel(reasoner_variants).install()
    with pytest.raises(SystemExit) as done:
        main([*args, "--resume", "--results-json", str(tmp_path / "r.json")])
    assert done.value.code == 0
    resumed = OptimizationResult.from_dict(json.loads((tmp_path / "r.json").read_text()))
    assert comparable(resumed) == comparable(expected)
    assert len(fake.requests) == total - paid_before  # nothing paid twice
    assert list_runs(tmp_path / "runs")[0].status == "completed"


def test_second_ctrl_c_exits_at_once(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    args = cli_args(tmp_path)
    marker = tmp_path / "cleanup-finished"
    assert run_interrupted(args, at_call=45, slow_cleanup=marker) == 130
    err = capfd.readouterr().err
    assert "interrupted again: exiting now" in err
    # Cut short: the hanging cleanup never returned, nor did the first interrupt's own exit
    # path run (it prints the --resume hint).
    assert not marker.exists() and "--resume" not in err
    [run] = list_runs(tmp_path / "runs")
    assert run.status == "interrupted"  # and resumable: the result and checkpoint were kept
    assert (run.path / "checkpoint.json").is_file()


def test_interrupt_cancels_in_flight_calls_and_closes_trackers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ctrl_c_raises: None
) -> None:
    """The Python API: callbacks get on_run_error(KeyboardInterrupt, partial); no call goes on
    in the background once ``run`` has raised."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-interrupt-0123456789")
    count = 0
    lock = threading.Lock()

    def interrupting(request: ChatRequest) -> str:
        nonlocal count
        with lock:
            count += 1
            # Answer 12: the preflight's 10 rows are done and the baseline has started; this
            # call itself is still waiting for its answer, so the baseline cannot be complete.
            if count == 12:
                ctrl_c()
        return answer(request)

    runner = LoopRunner.shared()
    before = reflex_tasks(runner)
    recorder = RecordingCallback()
    with serve(responder=interrupting, latency=0.2) as url:
        opt = (
            PromptOptimizer()
            .set_dataset(make_rows(60))
            .add_provider("openai/task", api_base=url)
            .add_metric("exact_match")
            .set_strategy("instructions")
            .set_run_dir(tmp_path)
            .configure(max_iterations=2, max_workers=8)
        )
        with pytest.raises(KeyboardInterrupt):
            opt.run(START, callbacks=[recorder])
    # Nothing of the run is left on the loop to make a call later: every coroutine the run
    # started (evaluation, model calls) is finished, not just cancelled-and-pending.
    assert reflex_tasks(runner) - before == set()
    [(error, partial)] = [args for hook, args in recorder.calls if hook == "on_run_error"]
    assert isinstance(error, KeyboardInterrupt) and partial is not None
    assert partial.baseline is None  # interrupted mid-baseline, with calls in flight
    assert not partial.completed and [r.status for r in list_runs(tmp_path)] == ["interrupted"]
