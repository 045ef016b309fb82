"""Outputs never replace inputs, and are written atomically.

``--results-json data.jsonl`` used to replace the dataset with the result JSON (exit 0, no
warning) and ``-o prompt.md`` the starting prompt. An output path that resolves to an input (the
same path, a symlink, a hard link: the same inode, or a file inside a prompt folder) is one error
line, exit 2, before any model call, and the input is byte-for-byte unchanged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import make_rows

from reflex.cli import main
from reflex.testing import FakeModel

MODELS = ("-m", "fake/task", "--reasoning-model", "fake/reasoner", "--max-iterations", "1")
DATA = "".join(json.dumps(r) + "\n" for r in make_rows(30))
PROMPT = "Classify the sentiment.\n"


def _link(target: str, name: str) -> Callable[[Path], str]:
    def make(root: Path) -> str:
        (root / name).symlink_to(root / target)
        return name

    return make


def _hardlink(target: str, name: str) -> Callable[[Path], str]:
    def make(root: Path) -> str:
        os.link(root / target, root / name)
        return name

    return make


def ok(args: list[str]) -> None:
    """A command that must succeed (click exits 0 at the end of a standalone command)."""
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 0


def _plain(name: str) -> Callable[[Path], str]:
    return lambda root: name


# (the flag, how the output path is made, what the error line names)
CLOBBERS = {
    "results-json is the dataset": ("--results-json", _plain("data.jsonl"), "dataset"),
    "-o is the prompt": ("-o", _plain("prompt.md"), "prompt"),
    "-o through ./": ("-o", _plain("./sub/../prompt.md"), "prompt"),
    "results-json symlink to the dataset": ("--results-json", _link("data.jsonl", "r"), "dataset"),
    "-o hard link to the prompt": ("-o", _hardlink("prompt.md", "best.md"), "prompt"),
    "-o a file in the prompt folder": ("-o", _plain("parts/role.md"), "prompt"),
}


def _workdir(root: Path, folder_prompt: bool) -> str:
    (root / "data.jsonl").write_text(DATA, encoding="utf-8")
    (root / "prompt.md").write_text(PROMPT, encoding="utf-8")
    (root / "sub").mkdir()
    (root / "parts").mkdir()
    (root / "parts" / "role.md").write_text("You classify sentiment.\n", encoding="utf-8")
    (root / "parts" / "task.md").write_text("Answer positive or negative.\n", encoding="utf-8")
    return "parts" if folder_prompt else "prompt.md"


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.mark.parametrize("case", list(CLOBBERS))
def test_an_output_that_is_an_input_is_refused_before_any_call(
    case: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fake_model: FakeModel,
) -> None:
    flag, make, what = CLOBBERS[case]
    monkeypatch.chdir(tmp_path)
    prompt = _workdir(tmp_path, folder_prompt=case.endswith("folder"))
    output = make(tmp_path)
    before = _snapshot(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(["optimize", "data.jsonl", prompt, *MODELS, flag, output])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and out == "", err
    (line,) = err.splitlines()
    assert line.startswith("error: ") and f"{flag} {Path(output)}" in line and what in line, line
    assert "choose another output path" in line
    assert _snapshot(tmp_path) == before  # the inputs are untouched
    assert fake_model.requests == []
    assert not (tmp_path / ".reflex" / "runs").exists()


def test_two_outputs_on_one_path_are_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fake_model: FakeModel,
) -> None:
    monkeypatch.chdir(tmp_path)
    _workdir(tmp_path, folder_prompt=False)
    with pytest.raises(SystemExit) as exit_info:
        main(["optimize", "data.jsonl", "prompt.md", *MODELS, "-o", "out", "--results-json", "out"])
    (line,) = capsys.readouterr().err.splitlines()
    assert exit_info.value.code == 2 and "--results-json out is also -o" in line
    assert fake_model.requests == []


def test_report_and_export_do_not_overwrite_the_record(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fake_model: FakeModel,
) -> None:
    monkeypatch.chdir(tmp_path)
    _workdir(tmp_path, folder_prompt=False)
    ok(["optimize", "data.jsonl", "prompt.md", *MODELS, "-o", "best.md"])
    (run,) = (tmp_path / ".reflex" / "runs").iterdir()
    capsys.readouterr()
    before = _snapshot(tmp_path)
    result_json = str(run / "result.json")
    for args in (
        ["report", run.name, "-o", result_json],
        ["export", run.name, "--training-jsonl", "data.jsonl"],
        ["export", run.name, "--training-jsonl", str(run / "events.jsonl")],
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(args)
        (line,) = capsys.readouterr().err.splitlines()
        assert exit_info.value.code == 2 and "choose another output path" in line, line
    assert _snapshot(tmp_path) == before


def test_outputs_are_written_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_model: FakeModel
) -> None:
    monkeypatch.chdir(tmp_path)
    _workdir(tmp_path, folder_prompt=False)
    (tmp_path / "old.json").write_text("{}", encoding="utf-8")
    ok(["optimize", "data.jsonl", "prompt.md", *MODELS, "-o", "best.md"])
    ok(["optimize", "data.jsonl", "prompt.md", *MODELS, "--results-json", "old.json"])
    assert json.loads((tmp_path / "old.json").read_text(encoding="utf-8"))["best_prompt"]
    # Written through a temporary file replaced in one step: none is left behind.
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
