"""Shared fixtures: a scripted fake task model + reasoning model behind the LiteLLM boundary."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from hypothesis import settings as hypothesis_settings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from typing import Any

import reflex
from reflex.models.client import load_litellm
from reflex.models.runner import LoopRunner
from reflex.plugins import reset_registry
from reflex.testing import FakeRequest

# The property tests draw the same inputs on every run, so a stop's CI can never fail on an input
# that no run before it tried; HYPOTHESIS_PROFILE=explore draws fresh ones (do it by hand, and
# turn what it finds into a fixed test).
hypothesis_settings.register_profile("repeatable", derandomize=True)
hypothesis_settings.register_profile("explore", derandomize=False)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

# pytester runs examples/plugin_package's own tests in-process (tests/test_plugin_package.py).
pytest_plugins = ["pytester", "services"]  # services: redis_url, postgres_url, mlflow_server

REFLEX_DIR = Path(reflex.__file__).parent
# How many short polls a test may make while it waits for a state (not a time): the bound only
# turns a hang into a failure, it is no speed requirement. 30,000 x 10 ms = 5 minutes.
HANG_POLLS = 30_000
KEYWORD = "Answer with one word."
BETTER = f"Classify the sentiment. {KEYWORD}"
LABELS = ["positive", "negative"]


def make_rows(n: int = 30) -> list[dict[str, str]]:
    words = ["great", "awful", "fine", "bad", "lovely", "poor"]
    return [
        {
            "id": f"r{i:03d}",
            "input": f"review {i}: {words[i % len(words)]} film",
            "ideal": LABELS[i % 2],
        }
        for i in range(n)
    ]


ANSWERS = {row["input"]: row["ideal"] for row in make_rows(200)}


def task_answer(request: FakeRequest) -> str:
    """Correct when the prompt has KEYWORD; otherwise correct only on every third row."""
    ideal = ANSWERS.get(request.user, "unknown")
    if KEYWORD in request.system:
        return ideal
    index = int(request.user.split()[1].rstrip(":"))
    return ideal if index % 3 == 0 else f"I think this review is {ideal}."


def reasoner_answer(request: FakeRequest) -> str:
    return (
        "<diagnosis>Outputs are sentences, the metric wants one word.</diagnosis>\n"
        f"<edit>ask for a one-word answer</edit>\n<prompt>{BETTER}</prompt>"
    )


def responder(request: FakeRequest) -> str:
    if request.model.startswith("fake/reasoner"):
        return reasoner_answer(request)
    return task_answer(request)


@pytest.fixture(autouse=True)
def _isolated_registry() -> Iterator[None]:
    reset_registry()
    yield
    reset_registry()


@pytest.fixture(autouse=True)
def _no_prompt_store_left() -> Iterator[None]:
    """A command line's --mlflow-tracking-uri is where its prompts:/ PROMPT is read, for the rest
    of that process: a test process runs many command lines, so each test starts without one."""
    yield
    prompts = sys.modules.get("reflex_mlflow.prompts")
    if prompts is not None:
        prompts.set_default_tracking_uri(None)


@pytest.fixture(autouse=True)
def _no_router_pacer_left() -> Iterator[None]:
    """A Router installs its pacer as a LiteLLM callback once per process; a test that made one
    takes it away again, so later tests see LiteLLM as a fresh process does (with a callback
    registered, LiteLLM prices custom-provider calls at $0 instead of leaving them unpriced)."""
    yield
    from reflex.models import pacing

    litellm = sys.modules.get("litellm")
    if litellm is None or not pacing._INSTALLED:
        return
    from reflex.models.litellm_call import _LITELLM_CALLBACK_LISTS

    for name in _LITELLM_CALLBACK_LISTS:
        listed = getattr(litellm, name, None)
        if isinstance(listed, list):
            listed[:] = [c for c in listed if c not in pacing._INSTALLED]
    pacing._INSTALLED.clear()
    pacing._PACED.clear()


@pytest.fixture
def fake_responder() -> Callable[[FakeRequest], str]:
    """Scripts the ``fake_model`` fixture of ``reflex.testing.pytest_plugin`` (pytest11)."""
    return responder


@pytest.fixture
def dataset_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in make_rows()), encoding="utf-8")
    return path


@pytest.fixture
def prompt_file(tmp_path: Path) -> Path:
    path = tmp_path / "prompt.md"
    path.write_text("Classify the sentiment.\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated MLflow sqlite store, built once a session (seconds) and copied per test."""
    from mlflow import MlflowClient

    path = tmp_path_factory.mktemp("mlflow") / "template.db"
    MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def uri(template_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh MLflow sqlite store's tracking URI; the test runs in ``tmp_path`` (artifacts land
    in ``tmp_path/mlruns``)."""
    db = tmp_path / "mlflow.db"
    shutil.copy(template_db, db)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    return f"sqlite:///{db}"


@pytest.fixture(scope="module")
def litellm() -> Any:
    return load_litellm()


@pytest.fixture(scope="module")
def runner() -> Iterator[LoopRunner]:
    """A private event loop; closing it cancels what is left (LiteLLM's logging worker)."""
    loop = LoopRunner()
    yield loop
    loop.close()


def reflex_tasks(runner: LoopRunner) -> set[asyncio.Task[Any]]:
    """Unfinished tasks on ``runner``'s loop running reflex code (evaluations, model calls).

    Once a run has returned or raised, none of its own may be left: a task left pending could
    still make (and pay for) a call. Compare with the set taken before the run; this is what a
    "sleep, then check that no request arrived" test can only sample.
    """

    async def collect() -> set[asyncio.Task[Any]]:
        current = asyncio.current_task()
        return {t for t in asyncio.all_tasks() if t is not current and not t.done()}

    def from_reflex(task: asyncio.Task[Any]) -> bool:
        code = getattr(task.get_coro(), "cr_code", None)
        return code is not None and Path(code.co_filename).is_relative_to(REFLEX_DIR)

    return {task for task in runner.run(collect()) if from_reflex(task)}


async def until(condition: Callable[[], bool], what: str) -> None:
    """Wait on the running loop until ``condition`` holds (checked every 10 ms)."""
    for _ in range(HANG_POLLS):
        if condition():
            return
        await asyncio.sleep(0.01)
    pytest.fail(f"never happened: {what}")


@pytest.fixture(autouse=True)
def _no_leaked_mlflow_experiment(monkeypatch: pytest.MonkeyPatch) -> None:
    """``mlflow.set_experiment`` exports MLFLOW_EXPERIMENT_ID for the whole process: undo it after
    every test (set then delete, so monkeypatch restores the variable's absence)."""
    monkeypatch.setenv("MLFLOW_EXPERIMENT_ID", "")
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID")


def parsed_options(options: Sequence[click.Option], *args: str) -> dict[str, Any]:
    """A tracker's CLI ``options``' values as the command line hands them to its
    ``to_callbacks`` (tests/test_mlflow_cli.py, tests/test_wandb_cli.py)."""
    values: dict[str, Any] = {}
    command = click.Command("t", params=list(options), callback=lambda **v: values.update(v))
    done = CliRunner().invoke(command, list(args), catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return values
