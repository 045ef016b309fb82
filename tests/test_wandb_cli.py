"""The ``wandb`` plugin's command-line side (reflex_wandb/cli.py): the ``--wandb*`` options of
``optimize`` parsed by click, turned into a ``WandbCallback``, and a run from the command line
read back from its offline W&B run on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import wandb
from click.testing import CliRunner
from conftest import parsed_options
from test_tracker_names import wandb_env  # noqa: F401 - module fixture: W&B files in tmp
from wandb_reader import load_run

from reflex.cli import build_cli
from reflex.testing import FakeModel
from reflex_wandb import WandbCallback
from reflex_wandb.cli import OPTIONS, to_callbacks
from reflex_wandb.offline import records


def parsed(*args: str) -> dict[str, Any]:
    """The options' values as the command line hands them to ``to_callbacks``."""
    return parsed_options(OPTIONS, *args)


def test_no_wandb_option_means_no_callback() -> None:
    assert to_callbacks(parsed()) == []


def test_any_wandb_option_turns_it_on_with_the_defaults() -> None:
    for args in (["--wandb"], ["--wandb-log-prompts"], ["--wandb-tag", "x"]):
        [callback] = to_callbacks(parsed(*args))
        assert isinstance(callback, WandbCallback), args
        assert callback.project == "aevyra-reflex" and callback.entity is None
        assert callback.mode is None  # WANDB_MODE, else online: W&B's own default


def test_every_option_reaches_the_callback() -> None:
    [callback] = to_callbacks(
        parsed(
            *["--wandb-project", "p", "--wandb-entity", "team", "--wandb-mode", "offline"],
            *["--wandb-run-name", "r1", "--wandb-tag", "a", "--wandb-tag", "b"],
            "--wandb-log-prompts",
        )
    )
    assert isinstance(callback, WandbCallback)
    assert (callback.project, callback.entity, callback.mode) == ("p", "team", "offline")
    assert callback.run_name == "r1" and callback.tags == ["a", "b"]
    assert callback.log_prompt_each_iter is True


def test_a_mode_w_and_b_does_not_have_is_refused_before_any_call(
    fake_model: FakeModel,
    dataset_file: Path,
    prompt_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # a regression must not leave a run folder in the checkout
    args = ["optimize", str(dataset_file), str(prompt_file), "-m", "fake/task"]
    done = CliRunner().invoke(build_cli(), [*args, "--wandb-mode", "shared"])
    assert done.exit_code == 2, done.output
    assert "'shared' is not one of 'online', 'offline', 'disabled'" in done.output
    assert fake_model.requests == []


def test_an_offline_run_from_the_command_line(
    fake_model: FakeModel,
    dataset_file: Path,
    prompt_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["optimize", str(dataset_file), str(prompt_file), "-m", "fake/task"]
    args += ["--reasoning-model", "fake/reasoner", "--max-iterations", "2"]
    args += ["--wandb-mode", "offline", "--wandb-project", "cli-proj", "--wandb-run-name", "r1"]
    args += ["--wandb-tag", "cli", "--wandb-tag", "nightly", "--wandb-log-prompts"]
    done = CliRunner().invoke(build_cli(), args, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    wandb.teardown()  # flush the .wandb file before reading it
    [where] = [line for line in done.stderr.splitlines() if line.startswith("W&B: offline")]
    [sync_dir] = [Path(word) for word in where.split() if "offline-run-" in word]
    run = load_run(str(sync_dir))
    assert run["exit_code"] == 0 and run["name"] == "r1"
    assert run["tags"] == ["cli", "nightly", "iterative"]  # the callback adds the strategy
    [log] = sync_dir.glob("run-*.wandb")
    projects = {r.run.project for r in records(log) if r.WhichOneof("record_type") == "run"}
    assert projects == {"cli-proj"}
    tables = {key for row in run["history"] for key in row if key.startswith("prompts.")}
    assert "prompts._type" in tables, tables  # --wandb-log-prompts' table
