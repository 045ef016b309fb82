"""Ctrl-C: the first one finishes cleanly and resumably, a second one exits at once.

The signal is real: the forked child sends SIGINT to itself from inside a model call (as a
terminal would, it lands in the main thread while it waits on the event-loop thread).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rows
from test_faults import answer
from test_resume import START, cached_rows, comparable, reasoner_variants

from reflex import OptimizationResult, PromptOptimizer
from reflex.models.client import load_litellm
from reflex.models.runner import LoopRunner
from reflex.run.resume import list_runs
from reflex.testing import FakeModel, FakeRequest, RecordingCallback
from reflex.testing.endpoint import ChatRequest, serve

ARGS = ["-m", "fake/task", "-s", "instructions", "--max-iterations", "4", "--max-workers", "4"]


def cli_args(tmp_path: Path) -> list[str]:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_rows(40)), encoding="utf-8")
    prompt = tmp_path / "p.md"
    prompt.write_text(START + "\n", encoding="utf-8")
    return ["optimize", str(data), str(prompt), *ARGS, "--run-dir", str(tmp_path / "runs")]


def run_interrupted(args: list[str], at_call: int, *, slow_cleanup: bool = False) -> int:
    """The CLI in a forked child that gets SIGINT at model call ``at_call``; its exit code.

    ``slow_cleanup``: the run's error handling then hangs (a tracker that does not answer)
    after sending itself a second SIGINT, which must end the process at once.
    """
    load_litellm()  # import once in the parent; the child inherits it
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            if slow_cleanup:
                from reflex.cli.console import ConsoleReporter

                def hang(self: Any, error: BaseException, partial: Any) -> None:
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(60)

                ConsoleReporter.on_run_error = hang  # type: ignore[method-assign]

            def fault(request: FakeRequest, n: int) -> BaseException | None:
                if n == at_call:
                    os.kill(os.getpid(), signal.SIGINT)
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
    started = time.monotonic()
    assert run_interrupted(args, at_call=45, slow_cleanup=True) == 130
    assert time.monotonic() - started < 30  # the hanging cleanup (60 s) was cut short
    assert "interrupted again: exiting now" in capfd.readouterr().err
    [run] = list_runs(tmp_path / "runs")
    assert run.status == "interrupted"  # and resumable: the result and checkpoint were kept
    assert (run.path / "checkpoint.json").is_file()


def test_interrupt_cancels_in_flight_calls_and_closes_trackers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
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
            if count == 12:  # mid-baseline (10 preflight rows first), calls in flight
                os.kill(os.getpid(), signal.SIGINT)
        return answer(request)

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
        requests_at_exit = url.stats().requests
        time.sleep(0.6)  # longer than a call: anything still going on would arrive now
        assert url.stats().requests == requests_at_exit
    pending = [t for t in _tasks(LoopRunner.shared()) if "Evaluator" in repr(t.get_coro())]
    assert pending == []
    [(error, partial)] = [args for hook, args in recorder.calls if hook == "on_run_error"]
    assert isinstance(error, KeyboardInterrupt) and partial is not None
    assert not partial.completed and [r.status for r in list_runs(tmp_path)] == ["interrupted"]


def _interrupt_main() -> None:
    os.kill(os.getpid(), signal.SIGINT)


def _tasks(runner: LoopRunner) -> list[Any]:
    import asyncio

    async def collect() -> list[Any]:
        current = asyncio.current_task()
        return [t for t in asyncio.all_tasks() if t is not current and not t.done()]

    return runner.run(collect())
