"""``optimize DATA prompts:/...``, ``promote`` and ``rollback`` on the command line, against a
real sqlite MLflow store and the fake model: exit codes as check's (0 moved or no-op, 1 refused,
2 bad input, said in one line before any model call)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from conftest import BETTER
from mlflow import MlflowClient
from mlflow.tracking._tracking_service import utils as tracking_utils
from test_engine import START
from test_mlflow_promotion import _no_better_idea, _task
from test_mlflow_registry import store  # noqa: F401 - the sqlite store fixture

from reflex.cli import build_cli
from reflex.testing import FakeModel

MODELS = ["-m", "fake/task", "--reasoning-model", "fake/reasoner"]


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(build_cli(), args, catch_exceptions=False)


@pytest.fixture
def cat(store: str) -> MlflowClient:  # noqa: F811
    client = MlflowClient(tracking_uri=store)
    client.register_prompt("cat", template=START)
    client.set_prompt_alias("cat", "production", 1)
    return client


def _optimize(dataset: Path, prompt: str, store: str, runs: Path) -> Result:  # noqa: F811
    tracking = ["--mlflow-tracking-uri", store, "--run-dir", str(runs)]
    return invoke(["optimize", str(dataset), prompt, *MODELS, "--max-iterations", "2", *tracking])


def _run_id(runs: Path) -> str:
    return sorted(p.name for p in (runs / "runs").iterdir())[-1]


def test_optimize_from_an_alias_then_promote_refuse_and_roll_back(
    fake_model: FakeModel,
    dataset_file: Path,
    tmp_path: Path,
    cat: MlflowClient,
    store: str,  # noqa: F811
) -> None:
    runs = tmp_path / ".reflex"
    done = _optimize(dataset_file, "prompts:/cat@production", store, runs)
    assert done.exit_code == 0, done.output
    assert cat.get_prompt_version("cat", 2).template == BETTER
    first = _run_id(runs)

    promoted = invoke(["promote", first, "--run-dir", str(runs)])
    assert promoted.exit_code == 0, promoted.output
    assert "calls      winner 0, cat v1 (@production) 0" in promoted.output
    assert "verdict   ok" in promoted.output and "@production of cat: v1 -> v2" in promoted.output
    again = invoke(["promote", first, "--run-dir", str(runs)])
    assert (
        again.exit_code == 0 and "nothing to do: @production already holds cat v2" in again.output
    )

    fake_model.responder = lambda r: _no_better_idea(r) if "reasoner" in r.model else _task(r)
    other = tmp_path / "other"  # its own cache: the reasoner's answer above is not replayed
    assert _optimize(dataset_file, "prompts:/cat/1", store, other).exit_code == 0
    # On every row of the dataset (not only the 6 test rows) the drop is significant.
    gate = ["--dataset", str(dataset_file), "--run-dir", str(other)]
    refused = invoke(["promote", _run_id(other), *gate])
    assert refused.exit_code == 1, refused.output
    assert (
        "verdict   REGRESSION" in refused.output and "refused: cat v3 regresses" in refused.output
    )
    assert f"rows of {dataset_file}, beyond the tolerance 0.0000, significant: paired p=" in (
        refused.output
    )
    assert cat.get_prompt_version_by_alias("cat", "production").version == 2

    back = invoke(["rollback", "cat", "--mlflow-tracking-uri", store])
    assert back.exit_code == 0 and "@production of cat: v2 -> v1 (rolled back)" in back.output
    twice = invoke(["rollback", "cat", "--mlflow-tracking-uri", store])
    assert twice.exit_code == 0 and "nothing to do" in twice.output
    assert cat.get_prompt_version_by_alias("cat", "production").version == 1


@pytest.mark.parametrize(
    ("prompt", "words"),
    [
        ("prompts:/dog/1", "no prompt named 'dog'"),
        ("prompts:/cat/9", "prompt 'cat' has no version 9"),
        ("prompts:/cat@staging", "prompt 'cat' has no alias @staging"),
    ],
)
def test_an_unknown_prompt_is_one_line_and_exit_2_before_any_call(
    fake_model: FakeModel,
    dataset_file: Path,
    tmp_path: Path,
    cat: MlflowClient,
    store: str,  # noqa: F811
    prompt: str,
    words: str,
) -> None:
    result = _optimize(dataset_file, prompt, store, tmp_path / ".reflex")
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and words in errors[0] and prompt in errors[0]
    assert fake_model.requests == []


def test_promote_a_run_that_registered_nothing_is_exit_2(
    fake_model: FakeModel, dataset_file: Path, prompt_file: Path, tmp_path: Path
) -> None:
    runs = tmp_path / ".reflex"
    made = invoke(
        ["optimize", str(dataset_file), str(prompt_file), *MODELS, "--run-dir", str(runs)]
    )
    assert made.exit_code == 0, made.output
    result = invoke(["promote", _run_id(runs), "--run-dir", str(runs)])
    assert result.exit_code == 2
    assert "registered no prompt version in MLflow" in result.output


def test_rollback_without_a_recorded_promote_is_exit_2(cat: MlflowClient, store: str) -> None:  # noqa: F811
    result = invoke(["rollback", "cat", "--mlflow-tracking-uri", store])
    assert result.exit_code == 2 and "nothing to roll back to" in result.output


def test_without_mlflow_a_registry_prompt_is_one_line_and_exit_2(
    fake_model: FakeModel,
    dataset_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow raises ImportError
    result = invoke(["optimize", str(dataset_file), "prompts:/cat/1", *MODELS])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "pip install 'aevyra-reflex[mlflow]'" in errors[0]
    assert fake_model.requests == []


def test_without_a_store_a_registry_prompt_is_one_line_and_exit_2(
    fake_model: FakeModel, dataset_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(tracking_utils, "_tracking_uri", None)
    result = invoke(["optimize", str(dataset_file), "prompts:/cat/1", *MODELS])
    assert result.exit_code == 2, result.output
    assert "no MLflow store to read it from: pass --mlflow-tracking-uri" in result.output
    assert fake_model.requests == []
