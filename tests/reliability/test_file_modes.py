"""Run folders and the response cache are private by default; ``--shared-run-dir`` for teams.

They hold prompts, dataset rows and model answers: under the default umask (022) they used to
be world-readable (0755 folders, 0644 files). A run now creates its folders 0700 and every file
in them (the cache and its -wal/-shm included) 0600, as ssh does; ``--shared-run-dir`` /
``set_run_dir(path, shared=True)`` makes them 0750/0640 for a team folder. A folder that
exists already keeps its mode (the team made it as it wants it).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_rows
from test_resume import START, reasoner_variants
from test_storage import cli_args, run_cli

from reflex import PromptOptimizer
from reflex.testing import FakeModel


@pytest.fixture(autouse=True)
def default_umask() -> Iterator[None]:
    previous = os.umask(0o022)  # the usual default: what made everything world-readable
    try:
        yield
    finally:
        os.umask(previous)


def modes(root: Path) -> dict[str, int]:
    """Every folder and file under ``root`` (itself included) -> its permission bits."""
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def check(root: Path, folder: int, file: int, *, cache: bool = True) -> None:
    seen = modes(root)
    folders = {p: m for p, m in seen.items() if (root / p).is_dir()}
    files = {p: m for p, m in seen.items() if not (root / p).is_dir()}
    assert ("cache.sqlite" in files) is cache and any(p.endswith("result.json") for p in files)
    assert any(p.endswith("prompts") for p in folders)
    # (in a setgid team folder, new folders inherit the setgid bit: the group stays the team's)
    assert {p: oct(m) for p, m in folders.items() if m & 0o777 != folder} == {}
    assert {p: oct(m) for p, m in files.items() if m != file} == {}


def run(run_dir: Path, shared: bool | None = None) -> None:
    FakeModel(reasoner_variants).install()
    opt = (
        PromptOptimizer()
        .set_dataset(make_rows(20))
        .add_provider("fake/task")
        .add_metric("exact_match")
        .set_strategy("instructions")
        .configure(max_iterations=2)
    )
    opt = opt.set_run_dir(run_dir) if shared is None else opt.set_run_dir(run_dir, shared=shared)
    opt.run(START)


def test_a_run_is_private_by_default(tmp_path: Path) -> None:
    run(tmp_path / ".reflex")
    check(tmp_path / ".reflex", folder=0o700, file=0o600)


def test_shared_run_dir_is_group_readable(tmp_path: Path) -> None:
    run(tmp_path / "team", shared=True)
    check(tmp_path / "team", folder=0o750, file=0o640)


def test_cli_shared_run_dir_and_an_existing_folder_keeps_its_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    team = tmp_path / "team"
    team.mkdir(mode=0o770)
    os.chmod(team, 0o2770)  # a setgid team folder, group-writable: left as the team made it
    FakeModel(reasoner_variants).install()
    code, err = run_cli([*cli_args(tmp_path, team), "--shared-run-dir"], capsys)
    assert code == 0, err
    assert stat.S_IMODE(team.stat().st_mode) == 0o2770
    [run_folder] = (team / "runs").iterdir()
    check(run_folder, folder=0o750, file=0o640, cache=False)
    # The cache sits in the team folder itself: its read/write bits (0660 less the umask).
    assert stat.S_IMODE((team / "cache.sqlite").stat().st_mode) == 0o640
    code, err = run_cli(cli_args(tmp_path, tmp_path / "mine"), capsys)
    assert code == 0, err
    check(tmp_path / "mine", folder=0o700, file=0o600)
