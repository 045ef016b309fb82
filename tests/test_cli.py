"""The ``aevyra-reflex`` CLI, driven in-process against the fake model."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from conftest import BETTER

from reflex import ConfigurationError, DatasetError, PluginError
from reflex.cli import build_cli
from reflex.optimizer import read_prompt
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


def _cli_subprocess(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    code = "import reflex.cli; reflex.cli.main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_error_traceback_only_with_verbose_in_a_real_process(
    tmp_path: Path, prompt_file: Path
) -> None:
    args = ["optimize", "missing.jsonl", str(prompt_file), "-m", "openai/gpt-4o-mini"]
    quiet = _cli_subprocess(args, tmp_path)
    assert quiet.returncode == 2
    assert quiet.stderr.startswith("error: missing.jsonl")
    assert len(quiet.stderr.splitlines()) == 1
    assert "Traceback" not in quiet.stderr

    loud = _cli_subprocess([*args, "-v"], tmp_path)
    assert loud.returncode != 0
    assert "Traceback" in loud.stderr
    assert "DatasetError" in loud.stderr


# --- help and imports -------------------------------------------------------------------------


def test_help() -> None:
    top = invoke(["--help"])
    assert top.exit_code == 0
    assert "optimize" in top.output and "plugins" in top.output
    sub = invoke(["optimize", "--help"])
    assert sub.exit_code == 0
    for flag in (
        "--model",
        "--metric",
        "--strategy",
        "--reasoning-model",
        "--results-json",
        "--max-workers",
        "--strategy-option",
    ):
        assert flag in sub.output, flag


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip()


def test_building_the_cli_does_not_import_litellm() -> None:
    code = "import reflex.cli, sys; reflex.cli.build_cli(); print('litellm' in sys.modules)"
    assert _python(code) == "False"


def test_help_and_plugins_import_no_metric_library() -> None:
    # Every plugin module is imported to register it; rouge-score (nltk, numpy) and sacrebleu
    # are imported only when their metric is built.
    code = (
        "import sys; from reflex.cli import main\n"
        "for args in (['--help'], ['plugins']):\n"
        "    try: main(args)\n"
        "    except SystemExit: pass\n"
        "heavy = ('rouge_score', 'nltk', 'numpy', 'sacrebleu')\n"
        "print('loaded:', [m for m in heavy if m in sys.modules])"
    )
    assert _python(code).splitlines()[-1] == "loaded: []"


def test_importing_the_package_imports_no_vendor() -> None:
    code = (
        "import reflex, aevyra_reflex, sys; "
        "print(any(m in sys.modules for m in ('litellm', 'mlflow', 'wandb')))"
    )
    assert _python(code) == "False"


def test_mlflow_callback_without_extra_says_how_to_install() -> None:
    if importlib.util.find_spec("mlflow") is not None:
        pytest.skip("mlflow is installed; the missing-extra message cannot be shown")
    with pytest.raises(ImportError, match=r"pip install 'aevyra-reflex\[mlflow\]'"):
        from aevyra_reflex import MLflowCallback  # noqa: F401
