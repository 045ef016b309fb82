"""examples/plugin_package: a complete third-party plugin, installed, used by its entry point.

Installing is simulated without pip or network: the package's metadata (with the entry points
its pyproject.toml declares) goes into a temporary site directory next to its sources, which is
what an installer leaves behind for importlib.metadata to find.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from reflex.cli import build_cli
from reflex.plugins import get_registry, reset_registry

tomllib = pytest.importorskip("tomllib")

PACKAGE = Path(__file__).resolve().parents[1] / "examples" / "plugin_package"


def _install(site: Path) -> list[Path]:
    """Write the package's dist-info into ``site``; returns the paths to put on sys.path."""
    project = tomllib.loads((PACKAGE / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    dist_info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n",
        encoding="utf-8",
    )
    lines = [f"[{group}]" for group in project["entry-points"]]
    text = "".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
        for group, eps in project["entry-points"].items()
    )
    assert lines == ["[reflex]"]
    (dist_info / "entry_points.txt").write_text(text, encoding="utf-8")
    return [site, PACKAGE / "src"]


def test_installed_plugin_loads_through_its_entry_point(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_model: object,
    dataset_file: Path,
    prompt_file: Path,
) -> None:
    for path in _install(tmp_path / "site"):
        monkeypatch.syspath_prepend(str(path))
    reset_registry()
    infos = {info.name: info for info in get_registry().plugins()}
    plugin = infos["reflex_plugin_example"]
    assert (plugin.distribution, plugin.version) == ("reflex-plugin-example", "0.1.0")
    assert (plugin.strategies, plugin.metrics) == (["suffixes", "reflect"], ["max_words"])

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "result.json"
    args = [
        "optimize",
        str(dataset_file),
        str(prompt_file),
        "-m",
        "fake/task",
        "-s",
        "suffixes",
        "--metric",
        "exact_match",
        "--metric",
        "max_words",
        "--results-json",
        str(out),
    ]
    result = CliRunner().invoke(build_cli(), args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert len(data["iterations"]) == 2
    assert set(data["final"]["scores_by_metric"]) == {"exact_match", "max_words"}


def test_plugin_package_own_tests_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytester: pytest.Pytester
) -> None:
    """Its tests use the pytest11 fixtures of reflex.testing.pytest_plugin, with no conftest.py."""
    for path in _install(tmp_path / "site"):
        monkeypatch.syspath_prepend(str(path))
    reset_registry()
    # In-process (litellm is already imported); pytester restores sys.modules afterwards.
    result = pytester.runpytest_inprocess(
        str(PACKAGE / "tests"), "-c", str(PACKAGE / "pyproject.toml"), "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=4)
