"""The ``optimize`` command (reflex/cli/optimize.py), driven in-process against the fake model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from conftest import BETTER

from reflex import ConfigurationError, DatasetError, PluginError
from reflex.cli import build_cli
from reflex.cli.optimize import print_trackers
from reflex.optimizer import prompt_spec, read_prompt
from reflex.testing import FakeModel

MODELS = ["-m", "fake/task", "--reasoning-model", "fake/reasoner"]


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(build_cli(), args, catch_exceptions=False)


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- a full run -------------------------------------------------------------------------------


def test_full_optimize_run(
    fake_model: FakeModel, dataset_file: Path, prompt_file: Path, in_tmp: Path
) -> None:
    best, out = in_tmp / "best.md", in_tmp / "out" / "nested" / "results.json"
    result = invoke(
        [
            "optimize",
            str(dataset_file),
            str(prompt_file),
            *MODELS,
            "--max-iterations",
            "3",
            "-o",
            str(best),
            "--results-json",
            str(out),
        ]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))

    # The written prompt is exactly the best prompt, and it is the one whose score is reported.
    assert best.read_text(encoding="utf-8") == data["best_prompt"] + "\n"
    assert read_prompt(best) == data["best_prompt"] == data["final"]["system_prompt"]
    assert data["best_prompt"] == BETTER

    for key in (
        "schema_version",
        "baseline",
        "final",
        "iterations",
        "p_value",
        "improvement",
        "improvement_pct",
        "best_prompt",
        "best_score",
    ):
        assert key in data, key
    assert data["baseline"]["system_prompt"] == "Classify the sentiment."
    assert data["baseline"]["mean_score"] < data["final"]["mean_score"] == 1.0
    assert data["improvement"] == pytest.approx(
        data["final"]["mean_score"] - data["baseline"]["mean_score"]
    )
    assert 0.0 <= data["p_value"] <= 1.0
    assert data["iterations"][0]["iteration"] == 1
    for key in ("score", "val_score", "scores_by_metric", "system_prompt", "reasoning"):
        assert key in data["iterations"][0], key

    # The run directory landed under the working directory, and the summary was printed.
    assert (in_tmp / ".reflex" / "runs").is_dir()
    assert "aevyra-reflex result" in result.stdout
    assert "final (test)" in result.stdout
    assert fake_model.calls_to("fake/reasoner")


# --- errors: exit 2, one line on stderr, no traceback ---------------------------------------


@pytest.fixture
def bad_inputs(tmp_path: Path) -> dict[str, Path]:
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text('{"input": "a", "ideal": "b"}\n{oops\n', encoding="utf-8")
    empty = tmp_path / "empty.md"
    empty.write_text("\n   \n", encoding="utf-8")
    return {"bad_json": bad_json, "empty": empty, "missing": tmp_path / "missing.jsonl"}


CASES: dict[str, tuple[Any, type[Exception], list[str]]] = {
    "missing dataset": (
        lambda d, p, b: [str(b["missing"]), str(p), *MODELS],
        DatasetError,
        ["missing.jsonl", "not found"],
    ),
    "invalid JSON line": (
        lambda d, p, b: [str(b["bad_json"]), str(p), *MODELS],
        DatasetError,
        ["bad.jsonl:2:", "JSON"],
    ),
    "empty prompt": (
        lambda d, p, b: [str(d), str(b["empty"]), *MODELS],
        ConfigurationError,
        ["empty.md", "empty"],
    ),
    "model without provider": (
        lambda d, p, b: [str(d), str(p), "-m", "gpt4", "--reasoning-model", "fake/reasoner"],
        ConfigurationError,
        ["'gpt4'", "provider/model"],
    ),
    "unknown metric": (
        lambda d, p, b: [str(d), str(p), *MODELS, "--metric", "nope"],
        PluginError,
        ["'nope'", "available: ", "exact_match, f1"],
    ),
    "iterative without reasoning model": (
        lambda d, p, b: [str(d), str(p), "-m", "fake/task", "-s", "iterative"],
        ConfigurationError,
        ["--reasoning-model", "iterative"],
    ),
    "max workers 0": (
        lambda d, p, b: [str(d), str(p), *MODELS, "--max-workers", "0"],
        ConfigurationError,
        ["max_workers", "0"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_errors_are_one_line(
    case: str,
    fake_model: FakeModel,
    dataset_file: Path,
    prompt_file: Path,
    bad_inputs: dict[str, Path],
    in_tmp: Path,
) -> None:
    make_args, _, fragments = CASES[case]
    result = invoke(["optimize", *make_args(dataset_file, prompt_file, bad_inputs)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    assert "Traceback" not in result.output
    assert result.stdout == ""
    assert fake_model.requests == []


@pytest.mark.parametrize("case", list(CASES))
def test_verbose_errors_propagate(
    case: str,
    fake_model: FakeModel,
    dataset_file: Path,
    prompt_file: Path,
    bad_inputs: dict[str, Path],
    in_tmp: Path,
) -> None:
    make_args, error_type, _ = CASES[case]
    with pytest.raises(error_type):
        invoke(["optimize", *make_args(dataset_file, prompt_file, bad_inputs), "-v"])
    assert fake_model.requests == []


# --- what optimize writes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "value", "what"),
    [
        ("--judge-criteria", "{file}", "judge criteria"),
        ("--reasoning-template", "iterative.system={file}", "reasoning template iterative.system"),
    ],
)
def test_o_may_not_replace_any_file_optimize_reads(
    flag: str,
    value: str,
    what: str,
    fake_model: FakeModel,
    dataset_file: Path,
    prompt_file: Path,
    in_tmp: Path,
) -> None:
    kept = prompt_file.parent / "kept.txt"
    kept.write_text("Grade the answer.\n", encoding="utf-8")
    judge = ["--judge", "fake/judge"] if flag == "--judge-criteria" else []
    args = [str(dataset_file), str(prompt_file), *MODELS, *judge, flag, value.format(file=kept)]
    result = invoke(["optimize", *args, "-o", str(kept)])
    assert result.exit_code == 2, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: -o {kept} is the {what} ({kept})"), line
    assert kept.read_text(encoding="utf-8") == "Grade the answer.\n"
    assert fake_model.requests == []


def test_components_edited_as_one_text_are_saved_as_that_text(
    fake_model: FakeModel, dataset_file: Path, in_tmp: Path
) -> None:
    """The reasoner rewrites the assembled prompt (components unknown): -o holds the text that
    was scored as one component in the input's format, and a note says so."""
    prompt = in_tmp / "prompt.json"
    prompt.write_text(json.dumps({"role": "Classify the sentiment.", "format": "Be careful."}))
    best, out = in_tmp / "best.json", in_tmp / "results.json"
    args = [str(dataset_file), str(prompt), *MODELS, "--max-iterations", "2"]
    result = invoke(["optimize", *args, "-o", str(best), "--results-json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["best_components"] is None and data["best_prompt"] == BETTER
    assert json.loads(best.read_text(encoding="utf-8")) == {"system": BETTER}
    note = (
        f"note: the strategy edited the assembled prompt; {best} holds it as one component, "
        "'system'"
    )
    assert note in result.stderr.splitlines()


def test_components_edited_as_one_text_read_back_as_the_prompt(
    fake_model: FakeModel, dataset_file: Path, in_tmp: Path
) -> None:
    prompt = in_tmp / "prompt.json"
    prompt.write_text(json.dumps({"role": "Classify the sentiment.", "format": "Be careful."}))
    best = in_tmp / "best.json"
    args = [str(dataset_file), str(prompt), *MODELS, "--max-iterations", "2", "-o", str(best)]
    assert invoke(["optimize", *args]).exit_code == 0
    assert prompt_spec(best).render() == BETTER  # how optimize reads its PROMPT


class _Tracker:
    """A tracker callback's optional ``where()``: the lines that say where the run went."""

    def __init__(self, lines: list[str] | None) -> None:
        self.lines = lines

    def where(self) -> list[str]:
        if self.lines is None:
            raise OSError("the tracker's store went away")
        return self.lines


def test_print_trackers_prints_each_where_and_skips_a_broken_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    trackers: list[Any] = [
        _Tracker(["MLflow: run abc", "  mlflow ui --backend-store-uri sqlite:///m.db"]),
        _Tracker(None),  # its where() raises: the command goes on
        object(),  # a callback with no where()
        _Tracker(["W&B: offline run in wandb/offline-run-1"]),
    ]
    print_trackers(trackers)
    shown = capsys.readouterr()
    assert shown.out == ""
    assert shown.err.splitlines() == [
        "MLflow: run abc",
        "  mlflow ui --backend-store-uri sqlite:///m.db",
        "W&B: offline run in wandb/offline-run-1",
    ]
