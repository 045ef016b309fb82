"""The README's install, ``pip install -e``, as a type checker sees it.

setuptools' default editable install of the renamed packages (``metrics/`` installs as
``reflex_metrics``) is an import hook that only a running interpreter sees: mypy and pyright
said "Cannot find implementation or library stub" for ``import aevyra_reflex``. pyproject.toml's
``[tool.distutils.editable_wheel] mode = "strict"`` makes it a tree of links named by a static
``.pth`` file, which both read. Marked ``install``: a fresh virtual environment and a pip build
(from the configured package index) take seconds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.install

USER_SCRIPT = """\
from aevyra_reflex import OptimizationResult, PromptOptimizer
from reflex.api import BaseStrategy
from reflex_metrics.f1 import TokenF1


def best(result: OptimizationResult) -> str:
    return result.best_prompt


optimizer: PromptOptimizer = PromptOptimizer().add_metric(TokenF1())
reveal_type(optimizer)
reveal_type(TokenF1())
reveal_type(BaseStrategy)
"""


def _project_copy(into: Path) -> Path:
    """The files an install reads: pyproject.toml, README, LICENSE and the package folders."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, into / name)
    for folder in set(config["tool"]["setuptools"]["package-dir"].values()):
        shutil.copytree(ROOT / folder, into / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return into


def _run(args: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env.pop("MYPYPATH", None)
    return subprocess.run(
        [str(arg) for arg in args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def test_mypy_strict_sees_an_editable_install(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    project = _project_copy(tmp_path / "project")
    venv = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", venv], tmp_path)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    # The README's first command, less the dependencies (no network: they come from this venv).
    pip = _run([python, "-m", "pip", "install", "-q", "--no-deps", "-e", project], tmp_path)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    site = Path(
        _run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path
        ).stdout.strip()
    )
    # This venv's dependencies (pydantic, litellm, ...) as a plain path: its own .pth files (its
    # editable finder of this checkout) are not read through it.
    (site / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    user = tmp_path / "user"
    user.mkdir()
    (user / "user.py").write_text(USER_SCRIPT, encoding="utf-8")

    ran = _run([python, "-c", "import aevyra_reflex, reflex_metrics.f1; print('ok')"], user)
    assert ran.stdout.strip() == "ok", ran.stderr
    checked = _run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--python-executable",
            python,
            "--cache-dir",
            tmp_path / "cache",
            "user.py",
        ],
        user,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert 'Revealed type is "reflex.optimizer.PromptOptimizer"' in checked.stdout
    assert 'Revealed type is "reflex_metrics.f1.TokenF1"' in checked.stdout
    assert "-> reflex.types.BaseStrategy[" in checked.stdout
