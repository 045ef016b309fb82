"""``--resume`` checks ``splits.json`` against the run's records first (issue 29, item 9).

A ``splits.json`` whose train and test were swapped used to resume with exit 0 and re-measure
"test" on the old train rows. Now each of the run's records can refuse it, before any call:
the split record a run keeps in ``run.json`` (sizes, sha256 of the ids), the sealed record
(``record.sig.json``), and ``evaluations.jsonl`` (each row names its example's split). One
``error:`` line naming the file and what differs, exit 2, nothing written, nothing paid.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from killed_run import RUN, interrupted_run

from reflex.checks.audit import seal_run
from reflex.cli import main
from reflex.testing import FakeModel


@pytest.fixture
def interrupted(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fake_model: FakeModel,
) -> Path:
    return interrupted_run(tmp_path, monkeypatch, capsys)


def _splits(run: Path) -> dict[str, list[str]]:
    data: dict[str, list[str]] = json.loads((run / "splits.json").read_text(encoding="utf-8"))
    return data


def _write_splits(run: Path, splits: dict[str, list[str]]) -> None:
    (run / "splits.json").write_text(json.dumps(splits), encoding="utf-8")


def _forget_split_record(run: Path) -> None:
    """run.json as a run made before it kept its split record."""
    meta = json.loads((run / "run.json").read_text(encoding="utf-8"))
    meta.pop("splits", None)
    (run / "run.json").write_text(json.dumps(meta), encoding="utf-8")


def _record(run: Path) -> dict[str, bytes]:
    """The run's files but its lock file (which the resume takes before it reads the run)."""
    return {p.name: p.read_bytes() for p in run.iterdir() if p.is_file() and p.name != ".lock"}


def _refused(run: Path, capsys: pytest.CaptureFixture[str], fake_model: FakeModel) -> str:
    before = _record(run)
    paid = len(fake_model.requests)
    with pytest.raises(SystemExit) as exit_info:
        main([*RUN, "--resume"])
    err = capsys.readouterr().err.splitlines()
    assert exit_info.value.code == 2, err
    (line,) = [e for e in err if e.startswith("error:")]
    assert err == [line]
    assert f"{run.name}/splits.json does not match the run's record" in line, line
    assert len(fake_model.requests) == paid  # 0 calls
    assert _record(run) == before  # nothing written
    return line


def test_train_and_test_swapped_are_refused(
    interrupted: Path, capsys: pytest.CaptureFixture[str], fake_model: FakeModel
) -> None:
    splits = _splits(interrupted)
    assert len(splits["train"]) != len(splits["test"])
    _write_splits(interrupted, {**splits, "train": splits["test"], "test": splits["train"]})
    line = _refused(interrupted, capsys, fake_model)
    n_train, n_test = len(splits["train"]), len(splits["test"])
    assert f"train holds {n_test} ids, {n_train} at the start" in line, line
    assert f"test holds {n_train} ids, {n_test} at the start" in line, line
    _write_splits(interrupted, splits)  # the ids as the run wrote them (other bytes): it resumes
    with pytest.raises(SystemExit) as exit_info:
        main([*RUN, "--resume"])
    assert exit_info.value.code == 0, capsys.readouterr().err


def test_a_swap_of_equal_sizes_is_refused_by_the_hash(
    interrupted: Path, capsys: pytest.CaptureFixture[str], fake_model: FakeModel
) -> None:
    splits = _splits(interrupted)
    assert len(splits["val"]) == len(splits["test"])
    _write_splits(interrupted, {**splits, "val": splits["test"], "test": splits["val"]})
    line = _refused(interrupted, capsys, fake_model)
    assert "ids are not those the run started with (sha256" in line, line


def test_without_a_split_record_the_evaluation_log_refuses_a_swap(
    interrupted: Path, capsys: pytest.CaptureFixture[str], fake_model: FakeModel
) -> None:
    splits = _splits(interrupted)
    _forget_split_record(interrupted)
    _write_splits(interrupted, {**splits, "train": splits["test"], "test": splits["train"]})
    line = _refused(interrupted, capsys, fake_model)
    assert "was evaluated as" in line and "evaluations.jsonl:" in line, line


def test_a_sealed_run_refuses_a_splits_file_changed_since_the_seal(
    interrupted: Path, capsys: pytest.CaptureFixture[str], fake_model: FakeModel
) -> None:
    splits = _splits(interrupted)
    _forget_split_record(interrupted)
    seal_run(interrupted)  # as a paused run is sealed; then the file is edited
    _write_splits(interrupted, {**splits, "train": list(reversed(splits["train"]))})
    line = _refused(interrupted, capsys, fake_model)
    assert "changed since the record was sealed (record.sig.json)" in line, line
