"""The tracker adapters reach the core only through the plugin API, and not through each other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import reflex.api

ROOT = Path(__file__).resolve().parents[1]
ADAPTERS = sorted(
    path.relative_to(ROOT).as_posix()
    for folder in ("reflex_mlflow", "reflex_wandb")
    for path in (ROOT / folder).glob("*.py")
)


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at its top, inside functions or under TYPE_CHECKING."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


@pytest.mark.parametrize("relative", ADAPTERS)
def test_adapters_import_reflex_only_through_the_api(relative: str) -> None:
    modules = imported_modules(ROOT / relative)
    core = sorted(m for m in modules if m == "reflex" or m.startswith("reflex."))
    assert set(core) <= {"reflex.api"}, f"{relative} imports {core}: use reflex.api"
    if relative.startswith("reflex_wandb/"):
        assert not [m for m in modules if m.startswith("reflex_mlflow")]


def test_the_api_exports_what_it_lists() -> None:
    assert reflex.api.__all__ == sorted(reflex.api.__all__)
    for name in reflex.api.__all__:
        assert getattr(reflex.api, name) is not None, name
    assert {"RunConfig", "Dataset"} <= set(dir(reflex.api))
